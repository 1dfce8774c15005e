"""The long form of one paper's comparison as CSV (``tables/[smoke/]<key>.csv``): one line per (published row,
run, reading, metric), a :class:`LongFormLine` each. Machines read this file (the nightly check, the tables index),
never the Markdown."""

from __future__ import annotations

import dataclasses
import io
from dataclasses import dataclass
from pathlib import Path

import pandas as pd

from dml_core.atomic_io import atomic_write_text
from dml_core.command_line import DML
from dml_core.errors import InputError

# A column that long forms written before it lack: read back as not measured.
LATER = {"later": True}


@dataclass(frozen=True)
class LongFormLine:
    """One line of the long form; its fields are the columns, in order, and their types how the CSV is read back
    (text, numbers, a flag). The meaning of each value: ``dml_core.tables.gate.join``."""

    table: str
    row: str
    method: str
    dataset: str
    quoted: bool
    recipe: str
    variant: str
    seeds: str
    unit: str
    samples: int
    metric: str
    published: float
    published_std: float
    reproduced: float
    std: float
    final: float
    spread: float
    spread_basis: str
    interval_low: float = dataclasses.field(metadata=LATER)
    interval_high: float = dataclasses.field(metadata=LATER)
    delta: float
    tolerance: float
    gate: float
    gate_basis: str
    status: str
    note: str


_FIELDS = dataclasses.fields(LongFormLine)
COLUMNS: tuple[str, ...] = tuple(field.name for field in _FIELDS)
# Read back as text, whatever pandas would guess ("" is a value, not a missing one).
_TEXT_COLUMNS = tuple(field.name for field in _FIELDS if field.type == "str")
_NUMBER_COLUMNS = tuple(field.name for field in _FIELDS if field.type in ("int", "float"))
_LATER_COLUMNS = tuple(field.name for field in _FIELDS if field.metadata.get("later"))


def long_form_frame(lines: list[LongFormLine]) -> pd.DataFrame:
    """The long form of ``lines``, columns :data:`COLUMNS` (none: an empty frame of those columns)."""
    return pd.DataFrame([dataclasses.astuple(line) for line in lines], columns=list(COLUMNS))


def long_form_path(markdown_path: Path) -> Path:
    """``tables/anml.md`` -> ``tables/anml.csv``."""
    return Path(markdown_path).with_suffix(".csv")


def write_long_form(path: str | Path, frame: pd.DataFrame) -> Path:
    """Write ``frame`` (columns exactly :data:`COLUMNS`) atomically; numbers at full precision."""
    if list(frame.columns) != list(COLUMNS):
        raise ValueError(f"long form: expected the columns {list(COLUMNS)}, found {list(frame.columns)}")
    return atomic_write_text(path, frame.to_csv(index=False, float_format="%.10g", lineterminator="\n"))


def read_long_form(path: str | Path) -> pd.DataFrame:
    """A long-form CSV written by :func:`write_long_form`, with its types back; errors name file and field."""
    path = Path(path)
    if not path.is_file():
        raise InputError(f"{path}: long-form table not found (run `{DML} tables` first)")
    try:
        frame = pd.read_csv(
            io.StringIO(path.read_text(encoding="utf-8")),
            dtype={column: str for column in _TEXT_COLUMNS},
            keep_default_na=False,
            na_values={column: [""] for column in _NUMBER_COLUMNS},
        )
    except (pd.errors.ParserError, ValueError) as error:
        raise InputError(f"{path}: not a long-form table CSV ({error})") from None
    for column in _LATER_COLUMNS:
        if column not in frame.columns:
            frame[column] = float("nan")
    missing = [column for column in COLUMNS if column not in frame.columns]
    if missing:
        raise InputError(f"{path}: field {missing[0]}: expected the columns {', '.join(COLUMNS)}, found "
                         f"{', '.join(frame.columns)}")  # fmt: skip
    for column in _NUMBER_COLUMNS:
        try:
            frame[column] = pd.to_numeric(frame[column])
        except ValueError:
            bad = next(v for v in frame[column] if not _is_number(v))
            raise InputError(f"{path}: field {column}: expected numbers, found {bad!r}") from None
    quoted = frame["quoted"].map(lambda v: {"True": True, "False": False, True: True, False: False}.get(v))
    if quoted.isna().any():
        raise InputError(
            f"{path}: field quoted: expected True or False, found {frame['quoted'][quoted.isna()].iloc[0]!r}"
        )
    frame["quoted"] = quoted.astype(bool)
    return frame[list(COLUMNS)]


def _is_number(value: object) -> bool:
    try:
        float(value)  # type: ignore[arg-type]
    except (TypeError, ValueError):
        return False
    return True
