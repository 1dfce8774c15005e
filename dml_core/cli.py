"""The ``dml`` command. Each subcommand lives in ``dml_core.commands.<module>`` with ``add_parser(subparsers)`` and
``run(args) -> int``; this module lists them with their one-line summaries and wires them together.

Only the subcommand being run is imported and gets its full parser; ``dml --help`` lists the others by the summary
here, so it imports no command module and answers at once. A command module imports what it needs at its top,
except the few whose own ``--help`` should stay light (``train``, ``evaluate``, ``reproduce``, ``tables``,
``weights``: their heavy imports wait in ``run``).
"""

from __future__ import annotations

import argparse
import importlib
import sys

from dml_core.command_line import DML
from dml_core.error_boundary import describe_failure

# Subcommands: their modules and summaries, in the order ``dml --help`` lists them.
COMMANDS: dict[str, tuple[str, str]] = {
    "prepare": ("prepare", "download/verify a dataset and write <root>/<dataset>/dml_index.csv"),
    "recipes": ("recipes", "list the runs of the recipes, show one fully expanded, list a paper's readings"),
    "train": ("train", "train and evaluate one recipe; writes checkpoint.pt and results.json"),
    "evaluate": ("evaluate", "evaluate a checkpoint on its recipe's test split"),
    "evaluate-embeddings": (
        "evaluate_embeddings",
        "evaluate embeddings from .npy files (Recall@K, NMI, F1, MAP@R, R-Precision)",
    ),
    "reproduce": ("reproduce", "run every recipe of a paper (finished runs skipped), then build tables/<paper>.md"),
    "tables": (
        "tables",
        "compare results with the published tables: tables/<paper>.md (+ .csv, figures); --check for the nightly",
    ),
    "nightly": (
        "nightly",
        "re-run every paper at this commit into results/nightly/<date>-<commit>/, compare, keep the history",
    ),
    "linear-table2": ("linear_table2", "anml Table 2: LANML+/-, PNCA, NCA, Euclidean kNN on a UCI data set (CPU)"),
    "weights": (
        "weights",
        "list the pretrained weight files, check them by sha256, optionally download the missing ones",
    ),
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
        f"iteration; `{DML} reproduce --skip-missing` exits 3 when it left runs out for want of their inputs.",
    )
    parser.add_argument(
        "--debug", action="store_true", help="show the traceback of a failure too (also accepted after COMMAND)"
    )
    subparsers = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")
    for name, (module_name, summary) in COMMANDS.items():
        if name == command:
            importlib.import_module(f"dml_core.commands.{module_name}").add_parser(subparsers)
        else:
            subparsers.add_parser(name, help=summary)
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
        failure = None if debug else describe_failure(error, args.command)
        if failure is None:
            raise
        print(f"error: {failure.line}", file=sys.stderr)
        return failure.exit_status


if __name__ == "__main__":
    sys.exit(main())
