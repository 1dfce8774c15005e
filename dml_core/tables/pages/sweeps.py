"""Which published tables sweep a setting, and over what: read from the rows' ``setting`` (``α = 26``,
``K = 2``, ``λ = 0 (Triplet)``, ``Power weighting, v2, p, q = 0, 0.5``) or, for rows that differ only by their
embedding size, from ``embedding_dim`` (cgml's ``Binomial-128``). A sweep table gets one figure of published
against reproduced over the swept value; every other table gets grouped bars."""

from __future__ import annotations

import re
from collections import defaultdict
from dataclasses import dataclass

from dml_core.published import PublishedRow, PublishedTable

_ASSIGNMENT = re.compile(r"^(?P<left>[^=]+?)\s*=\s*(?P<right>[^=()]+?)\s*(\(.*\))?$")
_NUMBER = re.compile(r"^-?[0-9]+(\.[0-9]+)?$")


@dataclass(frozen=True)
class SweepPoint:
    """One row placed in a sweep: its panel, its line within the panel, the parameter name and value."""

    row: str
    panel: str
    line: str
    parameter: str
    label: str  # the value as printed: "26", "0, 0.5"
    order: tuple[float, ...]  # the value as numbers, for sorting


def parse_setting(setting: str) -> tuple[list[str], str, str, tuple[float, ...]] | None:
    """``(prefix parts, parameter, value label, value)`` of a printed setting; None when it assigns no numbers.

    >>> parse_setting("α = 26")
    ([], 'α', '26', (26.0,))
    >>> parse_setting("Power weighting, v2, p, q = 0, 0.5")
    (['Power weighting', 'v2'], 'p, q', '0, 0.5', (0.0, 0.5))
    >>> parse_setting("λ = 0 (Triplet)"), parse_setting("Original"), parse_setting("p, d = 5, 1024")[1:3]
    (([], 'λ', '0', (0.0,)), None, ('p, d', '5, 1024'))
    """
    match = _ASSIGNMENT.match(setting.strip())
    if not match:
        return None
    values = [v.strip() for v in match["right"].split(",")]
    if not all(_NUMBER.match(v) for v in values):
        return None
    left = [part.strip() for part in match["left"].split(",")]
    if len(left) < len(values):
        return None
    names = left[len(left) - len(values) :]
    return left[: len(left) - len(values)], ", ".join(names), ", ".join(values), tuple(float(v) for v in values)


def _point(row: PublishedRow) -> SweepPoint | None:
    if row.setting:
        parsed = parse_setting(row.setting)
        if parsed is None:
            return None
        prefix, parameter, label, order = parsed
        panel = " · ".join([row.method, *prefix[:-1]]) if prefix else ""
        line = prefix[-1] if prefix else row.method
        return SweepPoint(row.id, panel, line, parameter, label, order)
    suffix = f"-{row.embedding_dim}"
    if row.embedding_dim and row.method.endswith(suffix):
        return SweepPoint(row.id, "", row.method.removesuffix(suffix), "embedding size", str(row.embedding_dim),
                          (float(row.embedding_dim),))  # fmt: skip
    return None


def sweep_points(table: PublishedTable) -> list[SweepPoint]:
    """The table's rows as points of a sweep, or ``[]`` when the table is not one (fewer than two rows place,
    or no line has two values). Rows that place nowhere (gpw's ``Square``) are left out."""
    points = [point for point in map(_point, table.rows) if point is not None]
    values_per_line: dict[tuple[str, str], set[tuple[float, ...]]] = defaultdict(set)
    for point in points:
        values_per_line[(point.panel, point.line)].add(point.order)
    if len(points) < 2 or max(len(values) for values in values_per_line.values()) < 2:
        return []
    return points
