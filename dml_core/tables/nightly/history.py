"""The nightly history, ``tables/nightly/history.csv``: every line each nightly measured (one CSV line per nightly,
paper and long-form line), with the tier, the code it ran and whether the nightly passed. The next nightly of a
tier is compared with the latest one that passed (a failed nightly never becomes the baseline: a regression
stays a regression until it is fixed), and the trend figures are drawn from it.

Written atomically; a nightly run again under the same name (an interrupted one, resumed) replaces its lines.
"""

from __future__ import annotations

import io
import math
from dataclasses import dataclass
from pathlib import Path

import pandas as pd

from dml_core.atomic_io import atomic_write_text
from dml_core.errors import InputError
from dml_core.tables.gate.check import line_key

HISTORY_NAME = "history.csv"
COLUMNS = ("nightly", "tier", "started", "commit", "dirty", "passed", "paper", "line", "metric", "value", "published")


def nightly_folder(root: Path) -> Path:
    """``<root>/nightly``: under the results, runs and tables roots, the nightlies' own folders."""
    return Path(root) / "nightly"


def history_path(tables_root: Path) -> Path:
    return nightly_folder(tables_root) / HISTORY_NAME


@dataclass(frozen=True)
class NightlyRecord:
    """One nightly: its name, tier, start (ISO time), the code it ran, whether it passed, and every line of the
    papers' long forms it built (``{paper: long form}``)."""

    name: str
    tier: str
    started: str
    commit: str
    dirty: bool
    passed: bool
    frames: dict[str, pd.DataFrame]

    def lines(self) -> pd.DataFrame:
        rows = [
            {
                "nightly": self.name,
                "tier": self.tier,
                "started": self.started,
                "commit": self.commit,
                "dirty": self.dirty,
                "passed": self.passed,
                "paper": paper,
                "line": line_key(line.table, line.row, str(line.recipe), line.metric, str(line.variant or "")),
                "metric": line.metric,
                "value": line.reproduced,
                "published": line.published,
            }
            for paper, frame in self.frames.items()
            for line in frame.itertuples()
        ]
        return pd.DataFrame(rows, columns=list(COLUMNS))


def read_history(path: str | Path) -> pd.DataFrame:
    """The history's lines (none when there is no file yet); a damaged file is an ``InputError`` naming it."""
    path = Path(path)
    if not path.is_file():
        return pd.DataFrame(columns=list(COLUMNS))
    try:
        frame = pd.read_csv(io.StringIO(path.read_text(encoding="utf-8")), dtype={"nightly": str, "commit": str})
    except (pd.errors.ParserError, ValueError, UnicodeDecodeError) as error:
        raise InputError(f"{path}: not a nightly history CSV ({error})") from None
    missing = [column for column in COLUMNS if column not in frame.columns]
    if missing:
        raise InputError(f"{path}: field {missing[0]}: expected the columns {', '.join(COLUMNS)}, found "
                         f"{', '.join(map(str, frame.columns))}")  # fmt: skip
    for column in ("dirty", "passed"):
        flags = frame[column].map({True: True, False: False, "True": True, "False": False})
        if flags.isna().any():
            raise InputError(
                f"{path}: field {column}: expected True or False, found {frame[column][flags.isna()].iloc[0]!r}"
            )
        frame[column] = flags.astype(bool)
    return frame[list(COLUMNS)]


def record_nightly(path: str | Path, record: NightlyRecord) -> Path:
    """Add ``record``'s lines to the history (replacing those of a nightly of the same name and tier)."""
    history = read_history(path)
    kept = history[~((history["nightly"] == record.name) & (history["tier"] == record.tier))]
    lines = record.lines()
    combined = lines if kept.empty else pd.concat([kept, lines], ignore_index=True)
    return atomic_write_text(path, combined.to_csv(index=False, float_format="%.10g", lineterminator="\n"))


@dataclass(frozen=True)
class Baseline:
    """The nightly a new one is compared with: its name, commit and measured values ``{paper: {line: value}}``."""

    name: str
    commit: str
    values: dict[str, dict[str, float]]


def previous_passing(history: pd.DataFrame, tier: str, current: str) -> Baseline | None:
    """The latest (by start) passing nightly of ``tier`` other than ``current``, or None."""
    passed = history[(history["tier"] == tier) & history["passed"] & (history["nightly"] != current)]
    if passed.empty:
        return None
    latest = passed.sort_values("started", kind="stable").iloc[-1]
    lines = passed[passed["nightly"] == latest["nightly"]]
    values: dict[str, dict[str, float]] = {}
    for line in lines.itertuples():
        if not math.isnan(line.value):
            values.setdefault(line.paper, {})[line.line] = float(line.value)
    return Baseline(str(latest["nightly"]), str(latest["commit"]), values)
