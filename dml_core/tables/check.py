"""``dml tables --check``: the nightly gate, and the nightly summary it compares against next time.

The gate reads the long form each paper's build wrote (``tables/[smoke/]<key>.csv``), never the Markdown. A
line fails when its reproduced number is below the published one minus its gate, or below the previous
nightly's number minus its gate, or when the previous nightly measured it and this one did not. The gate is the
larger of the metric's tolerance and the line's measured spread (``dml_core.tables.noise``: std over seeds, the
standard error over splits, or a single seed's 95% bootstrap half-width over queries); each failure says which it
used. Smoke numbers are never compared with the paper (they are not comparable), only with the
previous smoke nightly.
"""

from __future__ import annotations

import datetime as dt
import math
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path

import pandas as pd

from dml_core.atomic_io import atomic_write_json, read_json_object
from dml_core.errors import InputError
from dml_core.tables.join import BELOW
from dml_core.tables.long_form import read_long_form
from dml_core.tables.noise import BOOTSTRAP, TOLERANCE

SUMMARY_SCHEMA_VERSION = 1
SUMMARY_NAME = "summary.json"


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


def check_paper(key: str, frame: pd.DataFrame, previous: Mapping[str, float] | None, smoke: bool) -> list[Failure]:
    """Every failing line of one paper's long form (see the module docstring for the rules)."""
    failures = []
    for line in frame.itertuples():
        fail = lambda reason, line=line: failures.append(  # noqa: E731
            Failure(key, line.table, line.row, str(line.recipe), line.metric, reason)
        )
        measured = not math.isnan(line.reproduced)
        if measured and not smoke and line.status == BELOW:
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


def check_long_forms(
    paths: Mapping[str, Path], previous: Mapping[str, Mapping[str, float]], smoke: bool
) -> tuple[list[Failure], dict[str, dict[str, float]]]:
    """The gate over each paper's long-form CSV (``{paper: path}``): the failures, and this run's summary."""
    failures, values = [], {}
    for key, path in paths.items():
        frame = read_long_form(path)
        failures += check_paper(key, frame, previous.get(key), smoke)
        values[key] = summarize(frame)
    return failures, values


def write_summary(path: str | Path, values: Mapping[str, Mapping[str, float]], smoke: bool) -> Path:
    """Write ``{paper: {line key: value}}`` atomically (a crashed nightly never leaves half a summary)."""
    payload = {
        "schema_version": SUMMARY_SCHEMA_VERSION,
        "created": dt.datetime.now(dt.UTC).isoformat(timespec="seconds"),
        "smoke": smoke,
        "values": {paper: dict(sorted(lines.items())) for paper, lines in sorted(values.items())},
    }
    return atomic_write_json(path, payload)


def load_summary(path: str | Path, smoke: bool) -> dict[str, dict[str, float]]:
    """A previous nightly's ``{paper: {line key: value}}``; its smoke flag must match this run's."""
    path = Path(path)
    if path.is_dir():
        path = path / SUMMARY_NAME
    payload = read_json_object(path, "previous nightly summary")
    if payload.get("schema_version") != SUMMARY_SCHEMA_VERSION:
        found = payload.get("schema_version")
        raise InputError(f"{path}: field schema_version: expected {SUMMARY_SCHEMA_VERSION}, found {found!r}")
    if payload.get("smoke") is not smoke:
        raise InputError(
            f"{path}: field smoke: expected {smoke} (smoke and full-scale numbers are not comparable), "
            f"found {payload.get('smoke')!r}"
        )
    values = payload.get("values")
    if not isinstance(values, dict) or not all(
        isinstance(lines, dict) and all(isinstance(v, int | float) for v in lines.values()) for lines in values.values()
    ):
        raise InputError(f"{path}: field values: expected {{paper: {{line: number}}}}, found {values!r:.80}")
    return {paper: {k: float(v) for k, v in lines.items()} for paper, lines in values.items()}
