"""``dml evaluate CHECKPOINT``: evaluate a training checkpoint on its recipe's test split."""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

from dml_core.atomic_io import atomic_write_json
from dml_core.command_line import DML
from dml_core.errors import InputError
from dml_core.writable import require_writable_file


def add_parser(subparsers) -> None:
    parser = subparsers.add_parser(
        "evaluate",
        description=f"Load a checkpoint written by `{DML} train`, embed its recipe's test split and print every "
        "metric of the recipe's evaluation protocol as JSON.",
    )
    parser.add_argument("checkpoint", type=Path, help="checkpoint.pt from a run folder")
    parser.add_argument("--data-root", type=Path, help="prepared datasets (default: recipe, $DML_DATA_ROOT, ./data)")
    parser.add_argument("--device", help="torch device (default: cuda if present, else cpu)")
    parser.add_argument("--json", type=Path, dest="json_out", help="also write the result to this file")
    parser.set_defaults(run=run)


def run(args: argparse.Namespace) -> int:
    # Here, not at the top: the evaluation loads torch; `dml evaluate --help` stays light.
    from dml_core.training.evaluation import evaluate_checkpoint

    if not args.checkpoint.exists():
        raise InputError(f"{args.checkpoint}: checkpoint not found")
    if args.json_out:
        require_writable_file(args.json_out, "--json")  # before the test split is embedded
    payload = evaluate_checkpoint(args.checkpoint, data_root=args.data_root, device=args.device)
    json.dump(payload, sys.stdout, indent=2, sort_keys=True)
    sys.stdout.write("\n")
    if args.json_out:
        atomic_write_json(args.json_out, payload)
    return 0
