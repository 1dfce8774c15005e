"""Options several subcommands share, declared once."""

from __future__ import annotations

import argparse
from pathlib import Path
from typing import Any

from dml_core.output_paths import RECIPES_DIR, results_root, runs_root, tables_root
from dml_core.tier import Tier


def add_reading_option(parser: argparse.ArgumentParser, help_text: str) -> None:
    """``--reading NAME=VALUE`` (repeatable) into ``args.readings``: another value of a named reading."""
    parser.add_argument("--reading", dest="readings", action="append", default=[], metavar="NAME=VALUE", help=help_text)


def _integer_at_least(minimum: int, what: str):
    def parse(text: str) -> int:
        try:
            value = int(text)
        except ValueError:
            raise argparse.ArgumentTypeError(f"expected {what}, found {text!r}") from None
        if value < minimum:
            raise argparse.ArgumentTypeError(f"expected {what}, found {value}")
        return value

    parse.__name__ = what  # argparse names the type in its own messages
    return parse


positive_int = _integer_at_least(1, "a positive integer")
"""An argparse type: an integer of at least 1 (counts, iterations, sizes).

>>> positive_int("3")
3
>>> positive_int("-5")
Traceback (most recent call last):
argparse.ArgumentTypeError: expected a positive integer, found -5
"""

non_negative_int = _integer_at_least(0, "a non-negative integer")
"""An argparse type: an integer of at least 0 (seeds)."""


def positive_float(text: str) -> float:
    """An argparse type: a finite number above 0.

    >>> positive_float("1.5")
    1.5
    >>> positive_float("nan")
    Traceback (most recent call last):
    argparse.ArgumentTypeError: expected a number above 0, found nan
    """
    try:
        value = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected a number above 0, found {text!r}") from None
    if not 0 < value < float("inf"):
        raise argparse.ArgumentTypeError(f"expected a number above 0, found {value}")
    return value


DEVICE_HELP = (
    "torch device (default: cuda if present; a full-scale run refuses to fall back to the CPU, --device cpu trains "
    "it there, the --smoke and --mini tiers take the CPU without it)"
)


def add_run_options(parser: argparse.ArgumentParser) -> None:
    """The options of ``dml_core.runner.run_options.RunOptions`` (``dml reproduce`` and ``dml nightly``): where
    the runs read and write, and how they train."""
    parser.add_argument("--data-root", type=Path, help="prepared datasets (default: $DML_DATA_ROOT, ./data)")
    parser.add_argument("--device", help=DEVICE_HELP)
    parser.add_argument("--recipes", type=Path, default=RECIPES_DIR, help="recipes root (reproduce/)")
    parser.add_argument("--runs", type=Path, help="run folders (default: $DML_RUNS_DIR or ./runs)")
    parser.add_argument("--results", type=Path, help="results root (default: $DML_RESULTS_DIR or ./results)")
    parser.add_argument("--tables", type=Path, help="tables root (default: $DML_TABLES_DIR or ./tables)")
    parser.add_argument("--papers-dir", type=Path, help="published tables root (default: the repository's papers/)")
    parser.add_argument("--tolerances", type=Path, help="tolerances file (default: reproduce/tolerances.yaml)")
    parser.add_argument("--no-progress", action="store_true", help="no progress bars")
    parser.add_argument(
        "--linear-jobs",
        type=positive_int,
        default=1,
        help="processes for the grid searches of the linear plans (reproduce/KEY/linear/, anml Table 2); "
        "the numbers do not depend on it",
    )
    parser.add_argument(
        "--pipeline",
        choices=("auto", "pil", "cache"),
        help="data.pipeline of every deep recipe (default: as the recipe says, auto: on CUDA the decoded uint8 "
        "cache where its batches are the PIL path's, i.e. random crops, with crops, flips and normalisation on the "
        "device; the PIL path elsewhere); the preflight prepares missing caches the disk can hold; recorded as an "
        "override, which leaves the content hash as it is where both give the same batches",
    )


def add_max_steps_option(parser: argparse.ArgumentParser) -> None:
    """``--max-steps N``: a rehearsal (``dml reproduce`` and ``dml train``)."""
    parser.add_argument(
        "--max-steps",
        type=positive_int,
        metavar="N",
        help="a rehearsal: train each full-scale recipe as it is (its content hash unchanged) for its first N "
        "iterations only, then evaluate on the Recall@K list the test split allows; runs and results go under "
        "rehearsal/ of the runs and results folders, the results file says it is a rehearsal, and no table ever "
        "admits it. For checking a machine end to end (with --device cpu, on tiny data) before a real run",
    )


def run_options(args: argparse.Namespace) -> dict[str, Any]:
    """``RunOptions``' fields from the flags of ``add_run_options`` (the roots' environment defaults resolved)."""
    return {
        "runs_root": args.runs or runs_root(),
        "results_root": args.results or results_root(),
        "tables_root": args.tables or tables_root(),
        "recipes_dir": args.recipes,
        "papers_dir": args.papers_dir,
        "tolerances_path": args.tolerances,
        "data_root": args.data_root,
        "device": args.device,
        "pipeline": args.pipeline,
        "progress": not args.no_progress,
        "linear_jobs": args.linear_jobs,
    }


def add_tier_flags(parser: argparse.ArgumentParser, smoke_help: str, mini_help: str) -> None:
    """``--smoke`` and ``--mini``, one at most (``chosen_tier`` reads them), each with the command's own help."""
    tier = parser.add_mutually_exclusive_group()
    tier.add_argument("--smoke", action="store_true", help=smoke_help)
    tier.add_argument("--mini", action="store_true", help=mini_help)


def chosen_tier(args: argparse.Namespace) -> Tier:
    """The tier ``--smoke`` or ``--mini`` selects (full without either)."""
    return Tier.from_flags(getattr(args, "smoke", False), getattr(args, "mini", False))
