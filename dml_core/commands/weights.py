"""``dml weights``: where each backbone's pretrained weight file belongs, whether it is there and intact; with
``--fetch``, every file asked for is tried (each reported: present, fetched or failed with why and where from)
before the command fails for any. A paper key asks for the files its runs load (``--only`` narrows the runs), and
no others."""

from __future__ import annotations

import argparse

from dml_core.command_line import DML
from dml_core.errors import InputError
from dml_core.vocabulary import RECIPE_KEYS


def add_parser(subparsers) -> None:
    parser = subparsers.add_parser(
        "weights",
        description="For each backbone: the weight file, its expected sha256, its sources, where it is looked for "
        "($DML_WEIGHTS_DIR, default ~/.cache/dml/weights, then torch hub's $TORCH_HOME/hub/checkpoints) and its "
        "status. Present files are checked by sha256. --fetch downloads missing files into $DML_WEIGHTS_DIR from "
        "each source in turn (the catalog of sources, or $DML_SOURCES), tries every file before failing, and is "
        "refused offline (HF_HUB_OFFLINE or DML_OFFLINE). A paper key stands for the backbones its runs load "
        "pretrained: `weights --fetch damlrrm` exits 0 when every file damlrrm needs is there.",
    )
    parser.add_argument(
        "names",
        nargs="*",
        metavar="NAME",
        help=f"a backbone, or a paper key ({', '.join(RECIPE_KEYS)}): the backbones its runs load; default: every "
        f"backbone (`{DML} weights` lists them)",
    )
    parser.add_argument("--only", nargs="+", default=[], metavar="ID", help="with a paper key: only these run ids")
    parser.add_argument("--fetch", action="store_true", help="download missing files (progress, resume)")
    parser.set_defaults(run=run)


def _backbones(args: argparse.Namespace) -> list[str]:
    """The backbones the arguments name: each backbone as given, each paper key's runs' (in order, once each)."""
    # Here, as in run: dml_core.models loads torch.
    from dml_core.models.weights import WEIGHT_FILES

    keys = [name for name in args.names if name in RECIPE_KEYS]
    if args.only and len(keys) != 1:
        given = " ".join(args.names) or "none"
        raise InputError(f"--only: chooses runs of one paper key, found {len(keys)} among NAME ({given})")
    chosen: list[str] = []
    for name in args.names:
        if name in RECIPE_KEYS:
            chosen += _paper_backbones(name, args.only)
        else:
            WEIGHT_FILES.lookup(name, field="NAME")
            chosen.append(name)
    return list(dict.fromkeys(chosen)) if args.names else sorted(WEIGHT_FILES)


def _paper_backbones(key: str, only: list[str]) -> list[str]:
    # Here: planning a paper's runs loads the runner (torch), needed only for a paper key.
    from dml_core.output_paths import results_root, runs_root, tables_root
    from dml_core.runner.fetch import pretrained_backbones
    from dml_core.runner.inline import PaperRun

    paper = PaperRun(key, only=only, runs_root=runs_root(), results_root=results_root(), tables_root=tables_root())
    plans, _ = paper.planned()
    backbones = pretrained_backbones(plans)
    print(f"{key}: its runs{' ' + ' '.join(only) if only else ''} load {', '.join(backbones) or 'no weight file'}")
    return backbones


def run(args: argparse.Namespace) -> int:
    # Here, not at the top: dml_core.models loads torch; `dml weights --help` stays light.
    from dml_core.models.weights import (
        WEIGHT_FILES,
        find_weight_file,
        resolve_weight_file,
        verify_weight_file,
        weights_cache_dir,
    )

    names = _backbones(args)
    failed = []
    for name in names:
        entry = WEIGHT_FILES[name]
        path = find_weight_file(entry)
        if args.fetch:
            present = path is not None
            try:
                path, sha256 = resolve_weight_file(entry)
                status = f"{'present' if present else 'fetched'} sha256:{sha256}"
            except InputError as error:
                failed.append(name)
                status = f"failed: {error}"
        elif path is not None:
            status = f"ok sha256:{verify_weight_file(path, entry)}"
        else:
            status = "missing"
        print(f"{name}: {status}", flush=True)
        where = path or weights_cache_dir() / entry.file_name
        print(f"  file {where}\n  expects {entry.verification} {entry.sha256}\n  sources {', '.join(entry.urls)}")
    if failed:
        raise InputError(
            f"weights: {len(failed)} of {len(names)} files not fetched ({', '.join(failed)}); the lines above say why "
            "and where each was tried"
        )
    return 0
