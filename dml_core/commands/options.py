"""Options several subcommands share, declared once."""

from __future__ import annotations

import argparse


def add_reading_option(parser: argparse.ArgumentParser, help_text: str) -> None:
    """``--reading NAME=VALUE`` (repeatable) into ``args.readings``: another value of a named reading."""
    parser.add_argument("--reading", dest="readings", action="append", default=[], metavar="NAME=VALUE", help=help_text)
