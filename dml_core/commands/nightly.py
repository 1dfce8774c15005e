"""``dml nightly``: every paper re-run at the current code into dated folders of its own, checked against the
published numbers and the previous passing nightly, and kept in the history (``dml_core.runner.nightly``)."""

from __future__ import annotations

import argparse
from pathlib import Path

from dml_core.output_paths import RECIPES_DIR, results_root, runs_root, tables_root
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
    parser.add_argument("--data-root", type=Path, help="prepared datasets (default: $DML_DATA_ROOT, ./data)")
    parser.add_argument("--device", help="torch device (default: cuda if present, else cpu)")
    parser.add_argument(
        "--pipeline",
        choices=("auto", "pil", "cache"),
        help="data.pipeline of every deep recipe (default: as the recipe says)",
    )
    parser.add_argument("--linear-jobs", type=int, default=1, help="processes for the linear plans' grid searches")
    parser.add_argument("--no-progress", action="store_true", help="no progress bars")
    parser.add_argument("--recipes", type=Path, default=RECIPES_DIR, help="recipes root (reproduce/)")
    parser.add_argument("--runs", type=Path, help="runs root (default: $DML_RUNS_DIR or ./runs)")
    parser.add_argument("--results", type=Path, help="results root (default: $DML_RESULTS_DIR or ./results)")
    parser.add_argument("--tables", type=Path, help="tables root (default: $DML_TABLES_DIR or ./tables)")
    parser.add_argument("--papers-dir", type=Path, help="published tables root (default: the repository's papers/)")
    parser.add_argument("--tolerances", type=Path, help="tolerances file (default: reproduce/tolerances.yaml)")
    parser.set_defaults(run=run)


def run(args: argparse.Namespace) -> int:
    nightly = Nightly(
        papers=args.paper,
        tier="smoke" if args.smoke else "full",
        results_root=args.results or results_root(),
        runs_root=args.runs or runs_root(),
        tables_root=args.tables or tables_root(),
        name=args.name,
        recipes_dir=args.recipes,
        papers_dir=args.papers_dir,
        tolerances_path=args.tolerances,
        data_root=args.data_root,
        device=args.device,
        pipeline=args.pipeline,
        progress=not args.no_progress,
        linear_jobs=args.linear_jobs,
    )
    return 0 if run_nightly(nightly).passed else 1
