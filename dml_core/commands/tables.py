"""``dml tables``: build ``tables/<key>.md`` (and its long form ``<key>.csv``) from the results files, and the
index ``tables/README.md``; ``--check`` is the nightly gate, read from the long forms."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from dml_core.output_paths import RECIPES_DIR, results_root, tables_root
from dml_core.published import PAPER_KEYS

SUMMARY = "compare results with the published tables: tables/<paper>.md (+ .csv, figures); --check for the nightly"


def add_parser(subparsers) -> None:
    parser = subparsers.add_parser(
        "tables",
        help=SUMMARY,
        description="Join every results file under RESULTS/<paper>/ that the results gate admits to the published "
        "rows it targets and write TABLES/<paper>.md (the paper's tables with published -> reproduced (gap) per "
        "cell, the claims judged, one figure per table, training time), its long form TABLES/<paper>.csv and the "
        "index TABLES/README.md. The gate admits a deep run only as the pinned recipe (its hash, readings, no --set "
        "but the seed and data.pipeline), on the rows' dataset, not smoke, with finite metrics, selections that "
        "its evaluations give and, where the data is here, the split index it recorded; it lists every other file "
        "as refused. With --check, exit 1 when a file is refused or a number is below published (or the previous "
        "nightly) minus its gate (the tolerance, or the measured spread where larger), read from the CSV files.",
    )
    parser.add_argument("--paper", nargs="+", choices=PAPER_KEYS, default=list(PAPER_KEYS), help="default: all")
    parser.add_argument("--smoke", action="store_true", help="the smoke results (RESULTS/smoke/) and tables")
    parser.add_argument("--results", type=Path, help="results root (default: $DML_RESULTS_DIR or ./results)")
    parser.add_argument("--tables", type=Path, help="tables root (default: $DML_TABLES_DIR or ./tables)")
    parser.add_argument("--recipes", type=Path, default=RECIPES_DIR, help="recipes root (reproduce/)")
    parser.add_argument("--papers-dir", type=Path, help="published tables root (default: the repository's papers/)")
    parser.add_argument("--tolerances", type=Path, help="tolerances file (default: reproduce/tolerances.yaml)")
    parser.add_argument(
        "--data-root",
        type=Path,
        help="prepared datasets, to check the index each deep run recorded (default: $DML_DATA_ROOT or ./data; "
        "where a dataset is not prepared, its runs' index is not checked and the tables say so)",
    )
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
    from dml_core.tables.index_check import default_data_root
    from dml_core.writable import require_writable_file, require_writable_folder

    tables = args.tables or tables_root()
    require_writable_folder(tables, "--tables")
    if args.summary:
        require_writable_file(args.summary, "--summary")
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
            tables_root=tables,
            recipes_dir=args.recipes,
            tolerances=tolerances,
            smoke=args.smoke,
            papers_dir=args.papers_dir,
            draw_plots=not args.no_plots,
            data_root=args.data_root or default_data_root(),
        )
        for key in args.paper
    ]
    for paper in built:
        print(paper.markdown_path)
        for refusal in paper.refused:  # the results gate's: in no table
            print(f"REFUSED {refusal}", file=sys.stderr)
        for note in paper.notes:
            print(f"note: {note}", file=sys.stderr)
    print(write_index(tables, tolerances, args.smoke, args.papers_dir))
    refused = [refusal for paper in built for refusal in paper.refused]
    failures, values = check_long_forms({paper.key: paper.long_form for paper in built}, previous, args.smoke)
    if args.check:
        if args.smoke:
            print("smoke: numbers are compared with the previous smoke nightly only, never with the paper")
        print(f"check: {len(failures)} failing line(s)" + (":" if failures else ""))
        for failure in failures:
            print(f"  FAIL {failure}")
        if refused:
            print(f"check: {len(refused)} results file(s) refused by the results gate (on stderr): fails")
    failed = bool(failures or refused) if args.check else False
    if args.summary and not failed:
        write_summary(args.summary, values, args.smoke)
        print(f"summary: {args.summary}")
    return 1 if failed else 0
