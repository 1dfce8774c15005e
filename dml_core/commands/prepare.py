"""``dml prepare``: download or take a dataset's archives, verify the DML split, write its index."""

from __future__ import annotations

import argparse
from pathlib import Path

from dml_core.data.prepare import prepare
from dml_core.data.registry import DATASETS


def add_parser(subparsers) -> None:
    lines = [f"  {name}: {spec.title}: {spec.how_to_prepare}" for name, spec in DATASETS.items()]
    parser = subparsers.add_parser(
        "prepare",
        help="download/verify a dataset and write <root>/<dataset>/dml_index.csv",
        description="Prepare a dataset with its class-disjoint DML split, checked against the published "
        "counts.\n" + "\n".join(lines),
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    parser.add_argument("dataset", choices=sorted(DATASETS))
    parser.add_argument("--root", type=Path, required=True, help="data folder; the dataset goes to ROOT/DATASET")
    parser.add_argument(
        "--archive",
        type=Path,
        action="append",
        default=[],
        metavar="PATH",
        help="an archive, annotation file or extracted folder you supply (repeatable)",
    )
    parser.add_argument("--no-download", action="store_true", help="never download; fail if the data is absent")
    parser.add_argument("--quiet", action="store_true", help="no progress bar")
    parser.set_defaults(run=run)


def run(args: argparse.Namespace) -> int:
    prepared = prepare(
        args.dataset, args.root, args.archive, allow_download=not args.no_download, progress=not args.quiet
    )
    counts = ", ".join(f"{split} {count:,}" for split, count in prepared.images_per_split.items())
    print(f"{prepared.dataset}: verified ({counts} images); index: {prepared.index_file}")
    return 0
