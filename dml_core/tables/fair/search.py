"""The fair study's validation search (the reading ``fair.search-point``, reproduce/fair/assumptions.yaml): MLRC's
remedy for loss hyper-parameters that the papers chose on their test classes. Per dataset and method, the points
that ran (``paper``: the table's runs; ``lower``, ``higher``), the one whose picked evaluations have the best mean
validation metric over its seeds (the metric the table's selection rule reads; the paper's point first on a tie),
and the comparison rebuilt from each method's picked point. The test classes choose neither the point nor the
checkpoint. The controls are not searched, so the rebuilt comparison has none.
"""

from __future__ import annotations

import statistics
from collections.abc import Sequence
from dataclasses import dataclass

from dml_core.tables.fair.study import (
    VALIDATION_RULES,
    DatasetSection,
    FairRun,
    MethodLine,
    is_search_variant,
    judged_section,
)

POINTS = ("paper", "lower", "higher")  # the values of fair.search-point, the paper's first


@dataclass(frozen=True)
class SearchedMethod:
    """One method's points: the mean validation metric of each point that ran, and the point picked."""

    method: str
    validation: dict[str, float]  # point -> mean over seeds of its picked evaluations' validation metric
    seeds: dict[str, int]  # point -> how many seeds ran it
    chosen: str


@dataclass(frozen=True)
class SearchSection:
    """One dataset's search: each method's points, and the comparison of the picked points."""

    section: DatasetSection
    methods: list[SearchedMethod]
    metric: str  # the validation metric the points were compared on


def _rank(point: str) -> int:
    """A point's place in ``POINTS`` (an unknown one last): the display order, and the order ties go by."""
    return POINTS.index(point) if point in POINTS else len(POINTS)


def point_of(run: FairRun) -> str:
    """The search point a run trained at ("paper" for the table's runs).

    >>> from types import SimpleNamespace as S
    >>> point_of(S(variant="fair.search-point=lower")), point_of(S(variant=""))
    ('lower', 'paper')
    """
    return run.variant.split("=", 1)[1] if run.variant else "paper"


def validation_mean(runs: Sequence[FairRun], rule: str) -> float:
    """The mean over ``runs`` of the validation metric ``rule`` reads, at the evaluation it picks."""
    return statistics.fmean((run.pick(rule)["validation_metrics"] or {})[VALIDATION_RULES[rule]] for run in runs)


def search_section(section: DatasetSection, runs: Sequence[FairRun], rule: str) -> SearchSection | None:
    """The search on ``section``'s dataset from ``runs`` (its results files of every reading), its points compared
    on the validation metric of ``rule`` (the table's selection rule); None where no run of a search point is
    among ``runs``."""
    searched = [run for run in runs if is_search_variant(run.variant)]
    if not searched:
        return None
    lines, methods = [], []
    for line in section.lines:
        if line.kind == "control":
            continue
        points = {"paper": list(line.runs)}
        for run in sorted(searched, key=lambda run: run.results.seed):
            if run.method == line.method:
                points.setdefault(point_of(run), []).append(run)
        ran = {point: points[point] for point in sorted(points, key=_rank) if points[point]}
        if not ran:
            lines.append(line)
            continue
        validation = {point: validation_mean(chosen, rule) for point, chosen in ran.items()}
        order = sorted(ran, key=lambda point: (-validation[point], _rank(point)))
        methods.append(SearchedMethod(line.method, validation, {p: len(r) for p, r in ran.items()}, order[0]))
        lines.append(MethodLine(line.method, line.dataset, tuple(ran[order[0]])))
    return SearchSection(judged_section(section.dataset, lines), methods, VALIDATION_RULES[rule])
