"""``dml nightly``: every paper re-run at the current code into dated folders of its own, checked against the
published numbers and the previous passing nightly, and kept in the history (``dml_core.runner.nightly``)."""

from __future__ import annotations

import argparse

from dml_core.commands.options import add_run_options, chosen_tier, run_options
from dml_core.runner.nightly import Nightly, run_nightly
from dml_core.vocabulary import PAPER_KEYS


def add_parser(subparsers) -> None:
    parser = subparsers.add_parser(
        "nightly",
        description="Train every run of every paper again at the current code (nothing finished elsewhere is "
        "skipped) into RESULTS/nightly/NAME/, RUNS/nightly/NAME/ and TABLES/nightly/NAME/ (NAME: <UTC date>-<commit>, "
        "with -dirty-<digest> for uncommitted changes; run again under the same name, an interrupted nightly "
        "resumes). Then check every line against the published numbers (full scale) and against the latest passing "
        "nightly of the same tier (a drop below its value minus the gate fails, as does a line it measured and this "
        "one did not), list waived cells apart, append every line to TABLES/nightly/history.csv and redraw "
        "TABLES/nightly/trends/<tier>-<paper>.png. Exit 1 when a line or a run failed, 2 on bad input.",
    )
    parser.add_argument("--smoke", action="store_true", help="the smoke tier (CPU, embedded dataset)")
    parser.add_argument("--paper", nargs="+", choices=PAPER_KEYS, default=list(PAPER_KEYS), help="default: all")
    parser.add_argument("--name", help="the nightly's name (default: <UTC date>-<commit>[-dirty-<digest>])")
    add_run_options(parser)
    parser.set_defaults(run=run)


def run(args: argparse.Namespace) -> int:
    nightly = Nightly(papers=args.paper, tier=chosen_tier(args), name=args.name, **run_options(args))
    return 0 if run_nightly(nightly).passed else 1
