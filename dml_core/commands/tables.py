"""``dml tables``: build ``tables/<key>.md`` (and its long form ``<key>.csv``) from the results files, and the
index ``tables/README.md``; ``--check`` is the nightly gate, read from the long forms."""

from __future__ import annotations

import argparse
from pathlib import Path

from dml_core.output_paths import RECIPES_DIR, results_root, tables_root
from dml_core.published import PAPER_KEYS

SUMMARY = "compare results with the published tables: tables/<paper>.md (+ .csv, figures); --check for the nightly"


def add_parser(subparsers) -> None:
    parser = subparsers.add_parser(
        "tables",
        help=SUMMARY,
        description="Join every results file under RESULTS/<paper>/ to the published rows it targets and write "
        "TABLES/<paper>.md (the paper's tables with published -> reproduced (gap) per cell, the claims judged, one "
        "figure per table, training time), its long form TABLES/<paper>.csv and the index TABLES/README.md. With "
        "--check, exit 1 when a number is below published (or the previous nightly) minus its gate (the tolerance, "
        "or the measured spread where larger), read from the CSV files.",
    )
    parser.add_argument("--paper", nargs="+", choices=PAPER_KEYS, default=list(PAPER_KEYS), help="default: all")
    parser.add_argument("--smoke", action="store_true", help="the smoke results (RESULTS/smoke/) and tables")
    parser.add_argument("--results", type=Path, help="results root (default: $DML_RESULTS_DIR or ./results)")
    parser.add_argument("--tables", type=Path, help="tables root (default: $DML_TABLES_DIR or ./tables)")
    parser.add_argument("--recipes", type=Path, default=RECIPES_DIR, help="recipes root (reproduce/)")
    parser.add_argument("--papers-dir", type=Path, help="published tables root (default: the repository's papers/)")
    parser.add_argument("--tolerances", type=Path, help="tolerances file (default: reproduce/tolerances.yaml)")
    parser.add_argument("--no-plots", action="store_true", help="skip the PNG figures")
    parser.add_argument("--check", action="store_true", help="exit 1 when a number is below tolerance")
    parser.add_argument("--previous", type=Path, help="the previous nightly's summary.json (or its folder) for --check")
    parser.add_argument(
        "--summary", type=Path, help="write this run's summary.json here (with --check: only when the check passes)"
    )
    parser.set_defaults(run=run)


def run(args: argparse.Namespace) -> int:
    from dml_core.tables import (
        build_paper_tables,
        check_long_forms,
        load_summary,
        load_tolerances,
        write_index,
        write_summary,
    )
    from dml_core.tables.check import SUMMARY_NAME

    tolerances = load_tolerances(args.tolerances)
    previous: dict[str, dict[str, float]] = {}
    if args.check and args.previous:
        # A folder (the nightly output folder, perhaps not created yet) means its summary.json.
        summary_file = args.previous if args.previous.suffix == ".json" else args.previous / SUMMARY_NAME
        if summary_file.exists():
            previous = load_summary(summary_file, args.smoke)
        else:
            print(f"no previous nightly summary at {summary_file}: comparing with the published numbers only")
    built = [
        build_paper_tables(
            key,
            results_root=args.results or results_root(),
            tables_root=args.tables or tables_root(),
            recipes_dir=args.recipes,
            tolerances=tolerances,
            smoke=args.smoke,
            papers_dir=args.papers_dir,
            draw_plots=not args.no_plots,
        )
        for key in args.paper
    ]
    for paper in built:
        print(paper.markdown_path)
    print(write_index(args.tables or tables_root(), tolerances, args.smoke, args.papers_dir))
    failures, values = check_long_forms({paper.key: paper.long_form for paper in built}, previous, args.smoke)
    if args.check:
        if args.smoke:
            print("smoke: numbers are compared with the previous smoke nightly only, never with the paper")
        print(f"check: {len(failures)} failing line(s)" + (":" if failures else ""))
        for failure in failures:
            print(f"  FAIL {failure}")
    failures = failures if args.check else []
    if args.summary and not failures:
        write_summary(args.summary, values, args.smoke)
        print(f"summary: {args.summary}")
    return 1 if failures else 0
