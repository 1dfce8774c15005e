"""``dml weights``: where each backbone's pretrained weight file belongs, whether it is there and intact."""

from __future__ import annotations

import argparse


def add_parser(subparsers) -> None:
    parser = subparsers.add_parser(
        "weights",
        description="For each backbone: the weight file, its expected sha256, its public source, where it "
        "belongs ($DML_WEIGHTS_DIR, default ~/.cache/dml/weights) and its status. Present files are checked "
        "by sha256. --fetch downloads missing files (refused offline: HF_HUB_OFFLINE or DML_OFFLINE).",
    )
    parser.add_argument(
        "backbones", nargs="*", metavar="BACKBONE", help="default: all of them (`dml weights` lists them)"
    )
    parser.add_argument("--fetch", action="store_true", help="download missing files through torch.hub")
    parser.set_defaults(run=run)


def run(args: argparse.Namespace) -> int:
    # Here, not at the top: dml_core.models loads torch; `dml weights --help` stays light.
    from dml_core.models.weights import WEIGHT_FILES, resolve_weight_file, verify_weight_file, weights_cache_dir

    for name in args.backbones:
        WEIGHT_FILES.lookup(name, field="BACKBONE")
    for name in args.backbones or sorted(WEIGHT_FILES):
        entry = WEIGHT_FILES[name]
        path = weights_cache_dir() / entry.file_name
        if args.fetch:
            path, sha256 = resolve_weight_file(entry)
            status = f"ok sha256:{sha256}"
        elif path.is_file():
            status = f"ok sha256:{verify_weight_file(path, entry)}"
        else:
            status = "missing"
        print(f"{name}: {status}")
        print(f"  file {path}\n  expects {entry.verification} {entry.sha256}\n  source {entry.url}")
    return 0
