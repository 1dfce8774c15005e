"""What a part of the check is (``Part``), what it is given (``CheckContext``) and what it hands back (``Outcome``,
or ``PartFailed`` / ``PartSkipped`` / ``PartStopped`` raised with the reason)."""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import torch


@dataclass(frozen=True)
class CheckContext:
    """Where a part runs and writes: ``device`` (the GPU; the CPU only in unit tests of a part's code), a scratch
    folder of its own, the data root the parts share (generated glyph sets), and the report folder (the bench keeps
    its JSON there)."""

    device: torch.device
    work_dir: Path
    data_root: Path
    report_dir: Path
    log: Callable[[str], None] = print
    deadline: float | None = None  # time.monotonic() at which the check's --time-limit ends; None: no limit

    def seconds_left(self) -> float:
        """Seconds to the deadline (infinite without one; negative once past it)."""
        return float("inf") if self.deadline is None else self.deadline - time.monotonic()

    def stop_if_out_of_time(self, done: str, figures: dict[str, Any]) -> None:
        """Between a part's units of work: raise ``PartStopped`` with what is ``done`` and the figures so far once
        the deadline has passed."""
        if self.seconds_left() <= 0:
            raise PartStopped(f"time limit reached after {done}", figures)


@dataclass(frozen=True)
class Outcome:
    """A passed part: its key figure in a few words (the summary's column) and every figure it measured."""

    summary: str
    figures: dict[str, Any] = field(default_factory=dict)


class PartFailed(Exception):
    """The part ran and found the GPU path broken (or could not finish): ``reason`` and the figures so far."""

    def __init__(self, reason: str, figures: dict[str, Any] | None = None) -> None:
        super().__init__(reason)
        self.reason, self.figures = reason, figures or {}


class PartStopped(Exception):
    """The check's time limit (``--time-limit``) ended the part before it finished; not a fault of the GPU path.
    ``reason`` says how far it got; ``figures`` keep what it measured."""

    def __init__(self, reason: str, figures: dict[str, Any] | None = None) -> None:
        super().__init__(reason)
        self.reason, self.figures = reason, figures or {}


class PartSkipped(Exception):
    """The part cannot run here for a reason other than a missing GPU (e.g. a file a checkout lacks)."""


@dataclass(frozen=True)
class Part:
    """One part of the check: ``run`` does it on ``context.device``; ``needs_gpu`` parts are skipped without one.
    ``needs_seconds``: what it takes on a 16-core GPU box to give its figures (all of them for a part that cannot
    stop early, the first for one that stops at the deadline with what it has): under ``--time-limit`` a part
    starts only with that much time left."""

    name: str
    what: str
    run: Callable[[CheckContext], Outcome]
    needs_gpu: bool = True
    needs_seconds: float = 0.0
