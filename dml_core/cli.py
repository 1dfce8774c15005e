"""The ``dml`` command. Each subcommand lives in ``dml_core.commands.<name>`` with a one-line ``SUMMARY``,
``add_parser(subparsers)`` and ``run(args) -> int``; this module only wires them together.

Only the subcommand being run gets its full parser: the others are listed by their summary. Command modules import
nothing heavy at module level (torch, pandas, faiss, matplotlib come inside ``add_parser`` or ``run``), so
``dml --help`` and the light commands' ``--help`` answer in well under a second instead of importing the stack.
"""

from __future__ import annotations

import argparse
import importlib
import sys

from dml_core.error_boundary import describe_failure

# Subcommands and their modules, in the order ``dml --help`` lists them.
COMMAND_MODULES = {
    "prepare": "prepare",
    "recipes": "recipes",
    "train": "train",
    "evaluate": "evaluate",
    "evaluate-embeddings": "evaluate_embeddings",
    "reproduce": "reproduce",
    "tables": "tables",
    "nightly": "nightly",
    "linear-table2": "linear_table2",
    "weights": "weights",
}


def build_parser(command: str | None = None) -> argparse.ArgumentParser:
    """The ``dml`` parser with ``command``'s full sub-parser; every other subcommand is only listed.

    >>> build_parser().parse_args(["tables"]).command  # a listed subcommand parses, without its options
    'tables'
    >>> build_parser("tables").parse_args(["tables", "--paper", "anml"]).paper
    ['anml']
    """
    parser = argparse.ArgumentParser(
        prog="dml",
        description="Deep metric learning reproduction suite: prepare, train, evaluate. An expected failure (bad "
        "input: exit 2; a failed run: exit 1; interrupted: exit 130) is one line naming the file, field or "
        "iteration.",
    )
    parser.add_argument(
        "--debug", action="store_true", help="show the traceback of a failure too (also accepted after COMMAND)"
    )
    subparsers = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")
    for name, module_name in COMMAND_MODULES.items():
        module = importlib.import_module(f"dml_core.commands.{module_name}")
        if name == command:
            module.add_parser(subparsers)
        else:
            subparsers.add_parser(name, help=module.SUMMARY)
    return parser


def _command_named(argv: list[str]) -> str | None:
    """The subcommand in ``argv``: its first word that is not an option (``dml`` itself has only ``-h``)."""
    return next((word for word in argv if not word.startswith("-")), None)


def main(argv: list[str] | None = None) -> int:
    """Run ``dml ARGV``: the one error boundary (``dml_core.error_boundary``) turns every expected failure into
    one line on stderr and its exit status; ``--debug`` keeps the traceback."""
    argv = sys.argv[1:] if argv is None else list(argv)
    debug = "--debug" in argv
    argv = [word for word in argv if word != "--debug"]
    args = build_parser(_command_named(argv)).parse_args(argv)
    try:
        return args.run(args)
    except BaseException as error:  # the boundary: what is not an expected failure is raised again
        failure = None if debug else describe_failure(error)
        if failure is None:
            raise
        print(f"error: {failure.line}", file=sys.stderr)
        return failure.exit_status


if __name__ == "__main__":
    sys.exit(main())
