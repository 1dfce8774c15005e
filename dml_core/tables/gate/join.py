"""Join results files to published rows: the long form, one line per (published row, run, reading, metric).

Each results file names the published rows it reproduces (``targets``); runs of one recipe under the same readings
are pooled over seeds (linear files over splits), and rows that planned runs target but no file covers yet are kept
as "not run", so the long form shows what is still missing. A line's status compares its gap with its gate
(``dml_core.tables.gate.noise``); smoke numbers get none (``n/a (smoke)``): they are not comparable.
"""

from __future__ import annotations

import math
from collections import defaultdict
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import pandas as pd

from dml_core.errors import InputError
from dml_core.linear.results_file import describe_linear_protocol
from dml_core.published import PublishedPaper, PublishedRow, find_row
from dml_core.results import AnyResults, LinearResultsFile, ResultsFile, load_results
from dml_core.tables.gate.long_form import LongFormLine, long_form_frame
from dml_core.tables.gate.noise import NoPerQueryData, PerQueryIntervals, bootstrap_interval, gate, line_spread
from dml_core.tables.gate.tolerances import Tolerances
from dml_core.tier import Tier

# A published ``<metric>_std`` beside ``<metric>`` is the ± of that metric's line (anml Table 2).
SPREAD_SUFFIX = "_std"

# Published metrics that describe training cost, not retrieval quality: shown in the training-time table.
TIMING_METRICS = frozenset({"iterations_per_second", "training_hours"})

WITHIN, BELOW, ABOVE, NOT_RUN, NOT_EVALUATED = "within tolerance", "below", "above", "not run", "not evaluated"
SMOKE = "n/a (smoke)"
WAIVED = "waived"  # below published, under a reviewed waiver (papers/<key>/known_gaps.yaml; known_gaps.py)


@dataclass(frozen=True)
class LoadedResults:
    """A validated results file and where it was read from (for error messages)."""

    path: Path
    results: AnyResults


def run_variant(results: AnyResults) -> str:
    """The non-default readings a run ran under ("" for the paper's default reading, and for linear runs).

    The recipe layer records them in the deep results file as ``recipe.content["variant"]`` (beside
    ``recipe.content["readings"]``, reading -> value); this is the one place the tables read it.
    """
    if isinstance(results, ResultsFile):
        variant = results.recipe.content.get("variant", "")
        return variant if isinstance(variant, str) else ""
    return ""


def status_of(published: float, reproduced: float | None, gate_width: float) -> str:
    """Where a reproduced number lies against the published one, ``gate_width`` points either side.

    >>> [status_of(55.1, r, 1.5) for r in (55.1, 53.6, 53.5, 56.7, None)]
    ['within tolerance', 'within tolerance', 'below', 'above', 'not run']
    """
    if reproduced is None or math.isnan(reproduced):
        return NOT_RUN
    delta = reproduced - published
    # Rounded to the printed precision so 53.6 - 55.1 = -1.5000000000000036 counts as within 1.5.
    if round(abs(delta), 9) <= gate_width:
        return WITHIN
    return BELOW if delta < 0 else ABOVE


@dataclass(frozen=True)
class Refusal:
    """A results file the tables do not take, and why: one line naming the field, what was expected and what
    was found (``dml_core.tables.gate.admission`` says what a file must be)."""

    path: Path
    reason: str

    def __str__(self) -> str:
        return f"{self.path}: {self.reason}"


def read_results_folder(folder: str | Path, tier: Tier) -> tuple[list[LoadedResults], list[Refusal]]:
    """Every ``*.json`` results file in ``folder`` (none when the folder does not exist) that reads as a valid
    results file of the folder's kind (smoke or full) and is the only file of its run, readings and seed; every
    other file is a :class:`Refusal` (unreadable, not valid, smoke and full mixed, a second copy of a run)."""
    folder = Path(folder)
    loaded: list[LoadedResults] = []
    refused: list[Refusal] = []
    seen: dict[tuple[str, str, int], Path] = {}
    for path in sorted(folder.glob("*.json")):
        try:
            results = load_results(path)
        except InputError as error:
            refused.append(Refusal(path, str(error).removeprefix(f"{path}: ")))
            continue
        if results.smoke != (tier == Tier.SMOKE):
            expected = "smoke" if tier == Tier.SMOKE else "full (not smoke)"
            refused.append(
                Refusal(path, f"field smoke: expected {expected} results in {folder}, found {results.smoke}")
            )
            continue
        key = (results.run_id, run_variant(results), results.seed)
        if key in seen:
            under = f" under readings {key[1]}" if key[1] else ""
            refused.append(
                Refusal(
                    path, f"recipe {key[0]}{under} seed {key[2]} is also in {seen[key]}; keep one results file per run"
                )
            )
            continue
        seen[key] = path
        loaded.append(LoadedResults(path, results))
    return loaded, refused


def load_results_folder(folder: str | Path, tier: Tier) -> list[LoadedResults]:
    """:func:`read_results_folder`, strict: the first file it refuses is an ``InputError`` naming it.

    Smoke and full runs never mix: a file whose ``smoke`` flag differs from ``smoke`` is an error.
    """
    loaded, refused = read_results_folder(folder, tier)
    if refused:
        raise InputError(str(refused[0]))
    return loaded


RunKey = tuple[str, str, str, str]  # (table, row, recipe id, variant)


def runs_by_target(paper: PublishedPaper, loaded: Iterable[LoadedResults]) -> dict[RunKey, list[AnyResults]]:
    """``(table, row, recipe id, variant) -> its runs (one per seed)``; a results file of another paper, or one
    naming a row that does not exist, is an error."""
    runs: dict[RunKey, list[AnyResults]] = defaultdict(list)
    for item in loaded:
        results = item.results
        if results.paper != paper.paper.key:
            raise InputError(f"{item.path}: field paper: expected {paper.paper.key!r}, found {results.paper!r}")
        for target in results.targets:
            try:
                find_row(paper, target.table, target.row)
            except InputError as error:
                raise InputError(f"{item.path}: field targets: {error}") from None
            runs[(target.table, target.row, results.run_id, run_variant(results))].append(results)
    return dict(runs)


def pooled(values: list[float]) -> tuple[float, float]:
    """Mean and sample standard deviation (NaN for a single run: one seed says nothing about spread).

    >>> pooled([1.0, 3.0]), pooled([2.0])
    ((2.0, 1.4142135623730951), (2.0, nan))
    """
    array = np.asarray(values, dtype=float)
    return float(array.mean()), float(array.std(ddof=1)) if len(array) > 1 else math.nan


def is_spread_metric(metric: str, metrics: Iterable[str]) -> bool:
    """``accuracy_std`` beside ``accuracy`` is the ± of the accuracy line, not a line of its own.

    >>> is_spread_metric("accuracy_std", ["accuracy", "accuracy_std"]), is_spread_metric("accuracy", ["accuracy"])
    (True, False)
    """
    return metric.endswith(SPREAD_SUFFIX) and metric.removesuffix(SPREAD_SUFFIX) in set(metrics)


def compared_metrics(row: PublishedRow) -> list[str]:
    """The row's metrics that get a line: not training cost, not the ± of another metric."""
    return [m for m in row.metrics if m not in TIMING_METRICS and not is_spread_metric(m, row.metrics)]


def linear_note(runs: Iterable[AnyResults]) -> str:
    """How the linear runs of a line were obtained (distinct descriptions, ``; ``-joined); "" for deep runs."""
    return "; ".join(sorted({describe_linear_protocol(r.protocol) for r in runs if isinstance(r, LinearResultsFile)}))


def _lines_for(
    table_id: str,
    row: PublishedRow,
    recipe: str,
    variant: str,
    runs: list[AnyResults],
    tolerances: Tolerances,
    tier: Tier,
    intervals: PerQueryIntervals,
) -> list[LongFormLine]:
    seeds = ",".join(str(seed) for seed in sorted(r.seed for r in runs))
    unit = "split" if runs and all(isinstance(r, LinearResultsFile) for r in runs) else "seed"
    note = linear_note(runs)
    lines = []
    for metric in compared_metrics(row):
        published = row.metrics[metric]
        # One value per deep run (its selected number), one per split for a linear run.
        samples = [r.metric_samples(metric) for r in runs]
        values = [value for run_values in samples for value in run_values]
        if runs and values and not all(samples):
            raise InputError(f"recipe {recipe}: metric {metric} is in some seeds' results but not in others")
        tolerance = tolerances.for_metric(metric)
        mean, std = pooled(values) if values else (math.nan, math.nan)
        finals = [value for run in runs for value in run.final_samples(metric)]
        interval = bootstrap_interval(runs, metric, intervals) if values else None
        spread = line_spread(values, unit, interval.half_width if interval else None)
        width, basis = gate(tolerance, spread)
        if runs and not values:
            status = NOT_EVALUATED
        elif tier == Tier.SMOKE and values:
            status = SMOKE
        else:
            status = status_of(published, mean, width)
        lines.append(
            LongFormLine(
                table=table_id,
                row=row.id,
                method=row.method,
                dataset=row.dataset,
                quoted=row.quoted,
                recipe=recipe,
                variant=variant,
                seeds=seeds,
                unit=unit,
                samples=len(values),
                metric=metric,
                published=published,
                published_std=row.metrics.get(metric + SPREAD_SUFFIX, math.nan),
                reproduced=mean,
                std=std,
                final=float(np.mean(finals)) if finals else math.nan,  # mean at the runs' last evaluations
                spread=spread.value,
                spread_basis=spread.basis,
                interval_low=interval.low if interval else math.nan,  # a single seed's 95% bootstrap interval
                interval_high=interval.high if interval else math.nan,
                delta=mean - published,
                tolerance=tolerance,
                gate=width,
                gate_basis=basis,
                status=status,
                note=note,
            )
        )
    return lines


def join(
    paper: PublishedPaper,
    loaded: Iterable[LoadedResults],
    tolerances: Tolerances,
    planned: Mapping[tuple[str, str], list[str]] | None = None,
    *,
    tier: Tier = Tier.FULL,
    intervals: PerQueryIntervals | None = None,
) -> pd.DataFrame:
    """One line per (published row, recipe, variant, metric) for every row that results or planned runs target,
    in the paper's order (tables, then rows), the default reading before variants.

    ``reproduced`` is the mean of the runs' selected numbers (``selection.metrics``), ``std`` their sample
    standard deviation, ``delta`` reproduced minus published; ``spread`` and ``gate`` as in
    :mod:`dml_core.tables.gate.noise`. Training-cost metrics are left to :mod:`dml_core.tables.pages.timing`.

    A run under non-default readings (its ``variant``) is a line of its own. A linear file (anml Table 2) gives one
    value a split, so its line shows mean ± sample std over splits, as the paper prints it; the row's published
    ``<metric>_std`` is that line's ± (``published_std``), shown, never gated, and ``note`` says how the linear
    number was obtained (``linear_note``).
    """
    runs = runs_by_target(paper, loaded)
    keys = set(runs)
    for (table_id, row_id), recipes in (planned or {}).items():
        find_row(paper, table_id, row_id)  # a recipe naming a row that does not exist is an error here too
        keys.update((table_id, row_id, recipe, "") for recipe in recipes)
    order = {table.id: index for index, table in enumerate(paper.tables)}
    row_order = {(table.id, row.id): index for table in paper.tables for index, row in enumerate(table.rows)}
    lines: list[LongFormLine] = []
    for table_id, row_id, recipe, variant in sorted(keys, key=lambda k: (order[k[0]], row_order[k[:2]], k[3], k[2])):
        row = find_row(paper, table_id, row_id)
        found = runs.get((table_id, row_id, recipe, variant), [])
        lines += _lines_for(table_id, row, recipe, variant, found, tolerances, tier, intervals or NoPerQueryData())
    return long_form_frame(lines)
