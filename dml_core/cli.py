"""The ``dml`` command. Each subcommand lives in ``dml_core.commands.<name>`` with
``add_parser(subparsers)`` and ``run(args) -> int``; this module only wires them together."""

from __future__ import annotations

import argparse
import importlib
import sys

from dml_core.errors import InputError

# Subcommand modules, in the order ``dml --help`` lists them.
COMMAND_MODULES = (
    "prepare",
    "train",
    "evaluate",
    "evaluate_embeddings",
    "reproduce",
    "tables",
    "linear_table2",
    "weights",
)


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="dml", description="Deep metric learning reproduction suite: prepare, train, evaluate."
    )
    subparsers = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")
    for name in COMMAND_MODULES:
        importlib.import_module(f"dml_core.commands.{name}").add_parser(subparsers)
    return parser


def main(argv: list[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    try:
        return args.run(args)
    except (InputError, FileNotFoundError) as error:  # user errors: one line, no traceback
        print(f"error: {error}", file=sys.stderr)
        return 2


if __name__ == "__main__":
    sys.exit(main())
