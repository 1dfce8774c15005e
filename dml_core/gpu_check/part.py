"""What a part of the check is (``Part``), what it is given (``CheckContext``) and what it hands back (``Outcome``,
or ``PartFailed`` / ``PartSkipped`` raised with the reason)."""

from __future__ import annotations

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


class PartSkipped(Exception):
    """The part cannot run here for a reason other than a missing GPU (e.g. a file a checkout lacks)."""


@dataclass(frozen=True)
class Part:
    """One part of the check: ``run`` does it on ``context.device``; ``needs_gpu`` parts are skipped without one."""

    name: str
    what: str
    run: Callable[[CheckContext], Outcome]
    needs_gpu: bool = True
