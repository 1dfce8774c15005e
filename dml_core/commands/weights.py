"""``dml weights``: where each backbone's pretrained weight file belongs, whether it is there and intact; with
``--fetch``, every file asked for is tried (each reported: present, fetched or failed with why and where from)
before the command fails for any."""

from __future__ import annotations

import argparse

from dml_core.errors import InputError


def add_parser(subparsers) -> None:
    parser = subparsers.add_parser(
        "weights",
        description="For each backbone: the weight file, its expected sha256, its sources, where it belongs "
        "($DML_WEIGHTS_DIR, default ~/.cache/dml/weights) and its status. Present files are checked by sha256. "
        "--fetch downloads missing files from each source in turn (the catalog of sources, or $DML_SOURCES), "
        "tries every file before failing, and is refused offline (HF_HUB_OFFLINE or DML_OFFLINE).",
    )
    parser.add_argument(
        "backbones", nargs="*", metavar="BACKBONE", help="default: all of them (`nox -s dml -- weights` lists them)"
    )
    parser.add_argument("--fetch", action="store_true", help="download missing files (progress, resume)")
    parser.set_defaults(run=run)


def run(args: argparse.Namespace) -> int:
    # Here, not at the top: dml_core.models loads torch; `dml weights --help` stays light.
    from dml_core.models.weights import WEIGHT_FILES, resolve_weight_file, verify_weight_file, weights_cache_dir

    for name in args.backbones:
        WEIGHT_FILES.lookup(name, field="BACKBONE")
    failed = []
    for name in args.backbones or sorted(WEIGHT_FILES):
        entry = WEIGHT_FILES[name]
        path = weights_cache_dir() / entry.file_name
        if args.fetch:
            present = path.is_file()
            try:
                path, sha256 = resolve_weight_file(entry)
                status = f"{'present' if present else 'fetched'} sha256:{sha256}"
            except InputError as error:
                failed.append(name)
                status = f"failed: {error}"
        elif path.is_file():
            status = f"ok sha256:{verify_weight_file(path, entry)}"
        else:
            status = "missing"
        print(f"{name}: {status}", flush=True)
        print(f"  file {path}\n  expects {entry.verification} {entry.sha256}\n  sources {', '.join(entry.urls)}")
    if failed:
        raise InputError(
            f"weights: {len(failed)} of {len(args.backbones or WEIGHT_FILES)} files not fetched "
            f"({', '.join(failed)}); the lines above say why and where each was tried"
        )
    return 0
