"""``dml tables --check`` and ``dml nightly``: the gate over the long forms, against the published numbers and the
previous nightly's (``dml_core.tables.nightly.history`` keeps those).

The gate reads the long form each paper's build wrote (``tables/[smoke/]<key>.csv``), never the Markdown. A
line fails when its reproduced number is below the published one minus its gate, or below the previous
nightly's number minus its gate, or when the previous nightly measured it and this one did not. The gate is the
larger of the metric's tolerance and the line's measured spread (``dml_core.tables.gate.noise``: std over seeds, the
standard error over splits, or a single seed's 95% bootstrap half-width over queries); each failure says which it
used. Smoke numbers are never compared with the paper (they are not comparable), only with the
previous smoke nightly. A line below published whose cell is under a reviewed waiver (status ``waived``,
``dml_core.tables.gate.known_gaps``) does not fail: it is listed apart, as :class:`Waived`.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path

import pandas as pd

from dml_core.tables.gate.join import BELOW, WAIVED
from dml_core.tables.gate.long_form import read_long_form
from dml_core.tables.gate.noise import BOOTSTRAP, TOLERANCE
from dml_core.tier import Tier


@dataclass(frozen=True)
class Failure:
    """One failed line: which paper, table, row, recipe and metric, and why (with the numbers)."""

    paper: str
    table: str
    row: str
    recipe: str
    metric: str
    reason: str

    def __str__(self) -> str:
        return f"{self.paper} {self.table} {self.row} [{self.recipe}] {self.metric}: {self.reason}"


class Waived(Failure):
    """A line below its published number whose cell is under a reviewed waiver: reported, never failed."""


@dataclass(frozen=True)
class GateReport:
    """What the gate found over the long forms: the failing lines, the waived ones, and every measured value
    (``{paper: {line key: value}}``, what the nightly history keeps)."""

    failures: list[Failure]
    waived: list[Waived]
    values: dict[str, dict[str, float]]


def line_key(table: str, row: str, recipe: str, metric: str, variant: str = "") -> str:
    """The summary's key of one line (a run under non-default readings carries them after a ``~``).

    >>> line_key("table1", "ours-cub200", "ours-cub200", "R@1"), line_key("t", "r", "x", "R@1", "a=b")
    ('table1/ours-cub200/ours-cub200/R@1', 't/r/x~a=b/R@1')
    """
    return f"{table}/{row}/{recipe}{'~' + variant if variant else ''}/{metric}"


def _key(line) -> str:
    return line_key(line.table, line.row, str(line.recipe), line.metric, str(line.variant or ""))


def summarize(frame: pd.DataFrame) -> dict[str, float]:
    """The reproduced value of every measured line of one paper, keyed by :func:`line_key`."""
    return {_key(line): float(line.reproduced) for line in frame.itertuples() if not math.isnan(line.reproduced)}


def gate_text(line) -> str:
    """``tolerance 1.5`` or ``the measured spread 2.10 (std over 3 seeds)``: what a line's gate is. A single seed's
    95% bootstrap interval over queries is named either way: as the gate, or beside the tolerance it stays under."""
    if line.gate_basis == TOLERANCE:
        under = (
            f" (above the 95% bootstrap half-width {line.spread:.2f} over queries)"
            if line.spread_basis == BOOTSTRAP
            else ""
        )
        return f"tolerance {line.gate:g}{under}"
    if line.gate_basis == BOOTSTRAP:
        return f"the 95% bootstrap half-width {line.gate:.2f} over queries (above the tolerance {line.tolerance:g})"
    return f"the measured spread {line.gate:.2f} ({line.gate_basis}, above the tolerance {line.tolerance:g})"


def check_paper(key: str, frame: pd.DataFrame, previous: Mapping[str, float] | None, tier: Tier) -> list[Failure]:
    """Every failing line of one paper's long form (see the module docstring for the rules)."""
    failures = []
    for line in frame.itertuples():
        fail = lambda reason, line=line: failures.append(  # noqa: E731
            Failure(key, line.table, line.row, str(line.recipe), line.metric, reason)
        )
        measured = not math.isnan(line.reproduced)
        if measured and tier != Tier.SMOKE and line.status == BELOW:
            fail(
                f"{line.reproduced:.2f} is below published {line.published:g} minus {gate_text(line)} "
                f"(delta {line.delta:+.2f})"
            )
        before = (previous or {}).get(_key(line))
        if before is None:
            continue
        if not measured:
            fail(f"not measured now; the previous nightly measured {before:.2f}")
        elif line.reproduced < before - line.gate:
            fail(
                f"{line.reproduced:.2f} is below the previous nightly's {before:.2f} minus {gate_text(line)} "
                f"(change {line.reproduced - before:+.2f})"
            )
    return failures


def waived_lines(key: str, frame: pd.DataFrame) -> list[Waived]:
    """The lines of one paper's long form that are below published under a waiver, with their numbers."""
    waived = []
    for line in frame[frame["status"] == WAIVED].itertuples():
        reason = (
            f"{line.reproduced:.2f} is below published {line.published:g} minus {gate_text(line)} "
            f"(delta {line.delta:+.2f}): waived (papers/{key}/known_gaps.yaml)"
        )
        waived.append(Waived(key, line.table, line.row, str(line.recipe), line.metric, reason))
    return waived


def check_long_forms(paths: Mapping[str, Path], previous: Mapping[str, Mapping[str, float]], tier: Tier) -> GateReport:
    """The gate over each paper's long-form CSV (``{paper: path}``) against the published numbers and the
    previous nightly's values (``{paper: {line key: value}}``, empty for none)."""
    failures, waived, values = [], [], {}
    for key, path in paths.items():
        frame = read_long_form(path)
        failures += check_paper(key, frame, previous.get(key), tier)
        waived += waived_lines(key, frame)
        values[key] = summarize(frame)
    return GateReport(failures, waived, values)


def gate_lines(gate: GateReport, tier: Tier) -> list[str]:
    """The gate's verdict as printed: the failing lines, then the waived ones (reported, not failed)."""
    lines = (
        ["smoke: numbers are never compared with the paper, only with the previous smoke nightly"]
        if tier == Tier.SMOKE
        else []
    )
    lines.append(f"check: {len(gate.failures)} failing line(s)" + (":" if gate.failures else ""))
    lines += [f"  FAIL {failure}" for failure in gate.failures]
    if gate.waived:
        lines.append(f"waived: {len(gate.waived)} line(s) below published under a reviewed waiver, not failed:")
        lines += [f"  WAIVED {waived}" for waived in gate.waived]
    return lines
