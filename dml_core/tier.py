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
    def from_flags(cls, smoke_flag: bool = False, mini_flag: bool = False) -> Tier:
        """The tier of the ``--smoke`` / ``--mini`` flags (and of results files that record them as booleans):
        the one place two booleans become a tier.

        >>> Tier.from_flags(smoke_flag=True), Tier.from_flags()
        (<Tier.SMOKE: 'smoke'>, <Tier.FULL: 'full'>)
        """
        if smoke_flag and mini_flag:
            raise ValueError("smoke and mini: a run belongs to one tier")
        return cls.SMOKE if smoke_flag else cls.MINI if mini_flag else cls.FULL

    @property
    def subfolder(self) -> str:
        """Where its output goes inside runs/, results/ and tables/: apart from full-scale numbers (``""``).

        >>> Tier.MINI.subfolder, Tier.FULL.subfolder
        ('mini', '')
        """
        return "" if self is Tier.FULL else self.value
