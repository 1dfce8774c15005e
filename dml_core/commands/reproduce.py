"""``dml reproduce KEY``: train every recipe of a paper (resumable), write results, build its tables."""

from __future__ import annotations

import argparse
from pathlib import Path

from dml_core.output_paths import RECIPES_DIR, results_root, runs_root, tables_root
from dml_core.published import PAPER_KEYS


def add_parser(subparsers) -> None:
    parser = subparsers.add_parser(
        "reproduce",
        help="run every recipe of a paper (finished runs skipped), then build tables/<paper>.md",
        description="Check that the datasets and weight files of reproduce/KEY/*.yaml are here, train each "
        "recipe x seed (interrupted runs resume, finished ones are skipped), write results/KEY/<id>-seed<N>.json "
        "and build tables/KEY.md. Linear plans (reproduce/KEY/linear/*.yaml: anml Table 2) run after the recipes, "
        "into the same results folder (--only takes their ids too; --seeds applies to recipes only). --smoke: the "
        "same recipes shrunk to the embedded dataset on the CPU, the linear plans to 2 splits and a one-point grid "
        "(results/smoke/, tables/smoke/; not comparable with the paper).",
    )
    parser.add_argument("paper", choices=PAPER_KEYS)
    parser.add_argument("--smoke", action="store_true", help="CPU smoke versions of the recipes")
    parser.add_argument("--seeds", type=int, nargs="+", help="seeds to run (default: each recipe's training.seed)")
    parser.add_argument("--only", nargs="+", default=[], metavar="ID", help="only these recipe ids")
    parser.add_argument("--data-root", type=Path, help="prepared datasets (default: $DML_DATA_ROOT, ./data)")
    parser.add_argument("--device", help="torch device (default: cuda if present, else cpu)")
    parser.add_argument("--recipes", type=Path, default=RECIPES_DIR, help="recipes root (reproduce/)")
    parser.add_argument("--runs", type=Path, help="run folders (default: $DML_RUNS_DIR or ./runs)")
    parser.add_argument("--results", type=Path, help="results root (default: $DML_RESULTS_DIR or ./results)")
    parser.add_argument("--tables", type=Path, help="tables root (default: $DML_TABLES_DIR or ./tables)")
    parser.add_argument("--papers-dir", type=Path, help="published tables root (default: the repository's papers/)")
    parser.add_argument("--tolerances", type=Path, help="tolerances file (default: reproduce/tolerances.yaml)")
    parser.add_argument("--no-progress", action="store_true", help="no progress bars")
    parser.add_argument(
        "--linear-jobs",
        type=int,
        default=1,
        help="processes for the grid searches of the linear plans (reproduce/KEY/linear/, anml Table 2); "
        "the numbers do not depend on it",
    )
    parser.set_defaults(run=run)


def run(args: argparse.Namespace) -> int:
    from dml_core.reproduce import reproduce_paper

    report = reproduce_paper(
        args.paper,
        recipes_dir=args.recipes,
        runs_root=args.runs or runs_root(),
        results_root=args.results or results_root(),
        tables_root=args.tables or tables_root(),
        smoke=args.smoke,
        seeds=args.seeds,
        only=args.only,
        data_root=args.data_root,
        device=args.device,
        papers_dir=args.papers_dir,
        tolerances_path=args.tolerances,
        progress=not args.no_progress,
        linear_jobs=args.linear_jobs,
    )
    print(
        f"{args.paper}: {len(report.trained)} trained, {len(report.skipped)} skipped (finished), "
        f"{len(report.failed)} failed"
    )
    for name, reason in report.failed.items():
        print(f"  FAILED {name}: {reason}")
    return 1 if report.failed else 0
