"""``dml tables``: build ``tables/<key>.md`` (and its long form ``<key>.csv``) from the results files, and the
index ``tables/README.md``; ``--mini`` the mini tier's pages ``tables/mini/<key>.md``; ``dml tables fair [--mini]``
the fair comparison's table instead. The pages are ``dml_core.tables.builder``'s, as ``dml reproduce`` builds them.
``--check`` is the nightly gate, read from the long forms."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from dml_core.command_line import DML
from dml_core.commands.options import add_tier_flags, chosen_tier
from dml_core.errors import InputError
from dml_core.output_paths import RECIPES_DIR, results_root, tables_root
from dml_core.output_paths import data_root as resolve_data_root
from dml_core.tier import Tier
from dml_core.vocabulary import FAIR_KEY, PAPER_KEYS
from dml_core.writable import require_writable_folder


def add_parser(subparsers) -> None:
    parser = subparsers.add_parser(
        "tables",
        description="Join every results file under RESULTS/<paper>/ that the results gate admits to the published "
        "rows it targets and write TABLES/<paper>.md (the paper's tables with published -> reproduced (gap) per "
        "cell, the claims judged, one figure per table, training time), its long form TABLES/<paper>.csv and the "
        "index TABLES/README.md. The gate admits a deep run only as the pinned recipe (its hash, readings, no --set "
        "but the seed and data.pipeline), on the rows' dataset, not smoke, with finite metrics, selections that "
        "its evaluations give and, where the data is here, the split index it recorded; it lists every other file "
        "as refused. With --check, exit 1 when a file is refused or a number is below published minus its gate "
        "(the tolerance, or the measured spread where larger), read from the CSV files; cells under a reviewed "
        f"waiver (papers/<paper>/known_gaps.yaml) are listed apart and do not fail. `{DML} nightly` also "
        "compares with the previous nightly. With --mini, the mini tier's pages TABLES/mini/<paper>.md from "
        "RESULTS/mini/<paper>/ instead (no index, no gate: they are checks that each run learns, compared with no "
        f"published number). `{DML} tables fair [--mini]` builds the fair comparison's table instead: "
        "TABLES/[mini/]fair.md, its CSV and figure, from RESULTS/[mini/]fair/.",
    )
    parser.add_argument(
        "study",
        nargs="?",
        choices=[FAIR_KEY],
        help="fair: the five methods and the classic baselines under one protocol (instead of the papers' tables)",
    )
    parser.add_argument("--paper", nargs="+", choices=PAPER_KEYS, default=list(PAPER_KEYS), help="default: all")
    add_tier_flags(
        parser,
        smoke_help="the smoke results (RESULTS/smoke/) and tables",
        mini_help="the mini tier's results (RESULTS/mini/) and pages (TABLES/mini/<paper>.md, or with fair "
        "TABLES/mini/fair.md)",
    )
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
    parser.add_argument(
        "--check",
        action="store_true",
        help="exit 1 when a number is below published minus its gate; cells under a reviewed waiver "
        f"(papers/<paper>/known_gaps.yaml) are listed apart and do not fail (`{DML} nightly` also compares "
        "with the previous nightly)",
    )
    parser.set_defaults(run=run)


def run(args: argparse.Namespace) -> int:
    # Here, not at the top: the page builder loads pandas and matplotlib; `dml tables --help` stays light.
    from dml_core.tables.builder.pages import build_pages
    from dml_core.tables.gate.check import check_long_forms, gate_lines
    from dml_core.tables.gate.tolerances import load_tolerances

    tables = args.tables or tables_root()
    require_writable_folder(tables, "--tables")
    tier = chosen_tier(args)
    if args.check and args.study == FAIR_KEY:
        raise InputError("--check: the nightly gate compares the papers' tables with their published numbers, not fair")
    if args.check and tier == Tier.MINI:
        raise InputError("--check: the nightly gate compares the papers' full or smoke tables, not the mini tier's")
    built = build_pages(
        [FAIR_KEY] if args.study == FAIR_KEY else args.paper,
        tier,
        results_root=args.results or results_root(),
        tables_root=tables,
        tolerances=load_tolerances(args.tolerances),
        recipes_dir=args.recipes,
        papers_dir=args.papers_dir,
        data_root=resolve_data_root(args.data_root),
        draw_plots=not args.no_plots,
        warn=lambda line: print(line, file=sys.stderr),
    )
    if not args.check:
        return 0
    gate = check_long_forms(built.long_forms, {}, tier)
    print("\n".join(gate_lines(gate, tier)))
    if built.refused:
        print(f"check: {len(built.refused)} results file(s) refused by the results gate (on stderr): fails")
    return 1 if gate.failures or built.refused else 0
