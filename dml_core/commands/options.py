"""Options several subcommands share, declared once."""

from __future__ import annotations

import argparse


def add_reading_option(parser: argparse.ArgumentParser, help_text: str) -> None:
    """``--reading NAME=VALUE`` (repeatable) into ``args.readings``: another value of a named reading."""
    parser.add_argument("--reading", dest="readings", action="append", default=[], metavar="NAME=VALUE", help=help_text)


def _integer_at_least(minimum: int, what: str):
    def parse(text: str) -> int:
        try:
            value = int(text)
        except ValueError:
            raise argparse.ArgumentTypeError(f"expected {what}, found {text!r}") from None
        if value < minimum:
            raise argparse.ArgumentTypeError(f"expected {what}, found {value}")
        return value

    parse.__name__ = what  # argparse names the type in its own messages
    return parse


positive_int = _integer_at_least(1, "a positive integer")
"""An argparse type: an integer of at least 1 (counts, iterations, sizes).

>>> positive_int("3")
3
>>> positive_int("-5")
Traceback (most recent call last):
argparse.ArgumentTypeError: expected a positive integer, found -5
"""

non_negative_int = _integer_at_least(0, "a non-negative integer")
"""An argparse type: an integer of at least 0 (seeds)."""


def positive_float(text: str) -> float:
    """An argparse type: a finite number above 0.

    >>> positive_float("1.5")
    1.5
    >>> positive_float("nan")
    Traceback (most recent call last):
    argparse.ArgumentTypeError: expected a number above 0, found nan
    """
    try:
        value = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected a number above 0, found {text!r}") from None
    if not 0 < value < float("inf"):
        raise argparse.ArgumentTypeError(f"expected a number above 0, found {value}")
    return value
