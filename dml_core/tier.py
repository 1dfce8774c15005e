"""The tier of a run: ``full`` (the paper's scale), ``smoke`` (the recipes shrunk to the embedded set: does it run)
or ``mini`` (the headline comparison on the embedded_mini glyphs: does it learn). One value where there were two
booleans, so a run cannot be smoke and mini at once; a string enum, so it reads and writes as its name."""

from __future__ import annotations

from enum import StrEnum


class Tier(StrEnum):
    FULL = "full"
    SMOKE = "smoke"
    MINI = "mini"

    @classmethod
    def from_flags(cls, smoke: bool = False, mini: bool = False) -> Tier:
        """The tier of the ``--smoke`` / ``--mini`` flags (and of results files that record them as booleans).

        >>> Tier.from_flags(smoke=True), Tier.from_flags()
        (<Tier.SMOKE: 'smoke'>, <Tier.FULL: 'full'>)
        """
        if smoke and mini:
            raise ValueError("smoke and mini: a run belongs to one tier")
        return cls.SMOKE if smoke else cls.MINI if mini else cls.FULL

    @property
    def subfolder(self) -> str:
        """Where its output goes inside runs/, results/ and tables/: apart from full-scale numbers (``""``).

        >>> Tier.MINI.subfolder, Tier.FULL.subfolder
        ('mini', '')
        """
        return "" if self is Tier.FULL else self.value
