"""The check's report: one ``PartResult`` per part, kept in ``<report dir>/gpu-check-<device slug>.json``.

A part's status is "passed", "failed: <why>", "skipped: <why>" or "stopped: <how far it got>" (the check's time
limit ended it; its figures are what it measured); only "passed" counts as done for ``--rerun-failed``. Each part
carries the environment it ran in (torch, CUDA, device, commit, python), since a report merges parts run at
different times.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Mapping
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

from dml_core.atomic_io import atomic_write_json, read_json_object
from dml_core.errors import InputError
from dml_core.output_paths import device_slug

PASSED = "passed"
NO_GPU = "skipped: no GPU"
TIME_LIMITED = ("stopped:", "skipped: time limit")  # the statuses --time-limit leaves: not done, not failed
SCHEMA = "dml gpu-check 1"


@dataclass(frozen=True)
class PartResult:
    status: str
    seconds: float = 0.0
    summary: str = ""  # the key figure in a few words
    figures: dict[str, Any] = field(default_factory=dict)
    environment: dict[str, Any] = field(default_factory=dict)

    @property
    def failed(self) -> bool:
        return self.status.startswith("failed")

    @property
    def passed(self) -> bool:
        return self.status == PASSED


def report_path(report_dir: Path, device_name: str | None) -> Path:
    return Path(report_dir) / f"gpu-check-{device_slug(device_name)}.json"


def load_report(path: Path) -> dict[str, PartResult]:
    """The parts of an earlier report (none if there is no file); a damaged one is an ``InputError`` naming it."""
    if not path.exists():
        return {}
    payload = read_json_object(path, "GPU check report")
    if payload.get("schema") != SCHEMA or not isinstance(payload.get("parts"), dict):
        raise InputError(
            f"{path}: expected a GPU check report (schema {SCHEMA!r} and a 'parts' object), found schema "
            f"{payload.get('schema')!r}; move it away or pass another --report-dir"
        )
    parts = {}
    for name, record in payload["parts"].items():
        try:
            parts[name] = PartResult(**record)
        except TypeError as error:
            raise InputError(f"{path}: field parts.{name}: not a part record ({error})") from None
        if not isinstance(parts[name].status, str):
            raise InputError(f"{path}: field parts.{name}.status: expected text, found {parts[name].status!r}")
    return parts


def json_safe(value: Any) -> Any:
    """``value`` as strict JSON can hold it: a non-finite number as its text (a broken kernel's NaN is a figure
    worth keeping), tuples and sets as lists, anything else unknown as its text.

    >>> json_safe({"loss": float("nan"), "ids": ("a", "b"), "n": 3, "seen": {2, 1}})
    {'loss': 'nan', 'ids': ['a', 'b'], 'n': 3, 'seen': [1, 2]}
    """
    if isinstance(value, dict):
        return {str(key): json_safe(item) for key, item in value.items()}
    if isinstance(value, list | tuple):
        return [json_safe(item) for item in value]
    if isinstance(value, set | frozenset):
        return [json_safe(item) for item in sorted(value, key=str)]
    if isinstance(value, float) and not math.isfinite(value):
        return str(value)
    if value is None or isinstance(value, str | int | float):
        return value
    return str(value)


def write_report(path: Path, device: str, parts: Mapping[str, PartResult]) -> Path:
    """The whole report, atomically (a reader or a killed check never leaves half a file)."""
    payload = {"schema": SCHEMA, "device": device, "parts": {name: asdict(result) for name, result in parts.items()}}
    return atomic_write_json(path, json_safe(payload))


def to_rerun(previous: Mapping[str, PartResult], chosen: Iterable[str]) -> list[str]:
    """The chosen parts that did not pass last time (failed, skipped, or not run at all).

    >>> to_rerun({"a": PartResult("passed"), "b": PartResult("failed: x"), "c": PartResult(NO_GPU)}, "abcd")
    ['b', 'c', 'd']
    """
    return [name for name in chosen if name not in previous or not previous[name].passed]


def summary_table(parts: Mapping[str, PartResult], order: Iterable[str], ran_now: Iterable[str]) -> str:
    """One line per part: name, status, seconds, key figure; ``*`` marks the parts this call ran."""
    ran = set(ran_now)
    rows = [("part", "status", "time", "key figure")]
    for name in order:
        result = parts.get(name)
        if result is None:
            rows.append((name, "not run", "", ""))
            continue
        status = result.status if len(result.status) <= 60 else result.status[:57] + "..."
        rows.append((name + ("*" if name in ran else ""), status, f"{result.seconds:.0f} s", result.summary))
    widths = [max(len(row[column]) for row in rows) for column in range(3)]
    return "\n".join(
        ("  ".join(cell.ljust(width) for cell, width in zip(row[:3], widths, strict=True)) + "  " + row[3]).rstrip()
        for row in rows
    )
