"""The fair study's validation search (the reading ``fair.search-point``, reproduce/fair/study.yaml, search): every
method and classic baseline at its paper's point and at the same points beside it (its main loss hyper-parameter and
the learning rate, each times the same factors). Per dataset and method, the points that ran, the one whose picked
evaluations have the best mean validation metric over its seeds (the metric the table's selection rule reads; the
paper's point first on a tie), and the comparisons rebuilt from each method's picked point, all exploratory: the
search's comparisons reuse the table's runs and are outside the family the study declared. The test classes choose
neither the point nor the checkpoint. The controls are not searched, so the rebuilt comparison has none.
"""

from __future__ import annotations

import statistics
from collections.abc import Sequence
from dataclasses import dataclass

from dml_core.recipes.study import PAPER_POINT, Study
from dml_core.tables.fair.study import (
    VALIDATION_RULES,
    DatasetSection,
    FairRun,
    MethodLine,
    is_search_variant,
    judged_section,
)
from dml_core.tier import Tier


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
    points: tuple[str, ...]  # every point of the declared search, the paper's first


def point_of(run: FairRun) -> str:
    """The search point a run trained at ("paper" for the table's runs).

    >>> from types import SimpleNamespace as S
    >>> point_of(S(variant="fair.search-point=lr-x2")), point_of(S(variant=""))
    ('lr-x2', 'paper')
    """
    return run.variant.split("=", 1)[1] if run.variant else PAPER_POINT


def validation_mean(runs: Sequence[FairRun], rule: str) -> float:
    """The mean over ``runs`` of the validation metric ``rule`` reads, at the evaluation it picks."""
    return statistics.fmean((run.pick(rule)["validation_metrics"] or {})[VALIDATION_RULES[rule]] for run in runs)


def search_section(
    section: DatasetSection, runs: Sequence[FairRun], rule: str, study: Study, tier: Tier
) -> SearchSection | None:
    """The search on ``section``'s dataset from ``runs`` (its results files of every reading), its points compared
    on the validation metric of ``rule`` (the table's selection rule); None where no run of a search point is
    among ``runs``."""
    searched = [run for run in runs if is_search_variant(run.variant)]
    if not searched:
        return None
    points = (PAPER_POINT, *study.search.points)

    def rank(point: str) -> int:  # a point's place in the declared search: the display order, and ties' order
        return points.index(point) if point in points else len(points)

    lines, methods = [], []
    for line in section.lines:
        if line.kind == "control":
            continue
        found = {PAPER_POINT: list(line.runs)}
        for run in sorted(searched, key=lambda run: run.results.seed):
            if run.method == line.method:
                found.setdefault(point_of(run), []).append(run)
        ran = {point: found[point] for point in sorted(found, key=rank) if found[point]}
        if not ran:
            lines.append(line)
            continue
        validation = {point: validation_mean(chosen, rule) for point, chosen in ran.items()}
        order = sorted(ran, key=lambda point: (-validation[point], rank(point)))
        methods.append(SearchedMethod(line.method, validation, {p: len(r) for p, r in ran.items()}, order[0]))
        lines.append(MethodLine(line.method, line.dataset, tuple(ran[order[0]]), line.kind))
    judged = judged_section(section.dataset, lines, rule, study, tier, search=True)
    return SearchSection(judged, methods, VALIDATION_RULES[rule], points)
