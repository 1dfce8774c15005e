"""Join results files to published rows: one line per (published row, recipe, metric).

Each results file names the published rows it reproduces (``targets``, copied from its recipe). Runs of the same
recipe with different seeds are pooled into mean and standard deviation. Rows a recipe under ``reproduce/<key>/``
(or a linear plan under ``reproduce/<key>/linear/``) targets but no results file covers yet are kept, marked
"not run", so a table shows what is still missing.

Linear results files (anml Table 2) contribute one value per split, so their line shows mean ± sample std over
splits, as the paper prints it; the published ``<metric>_std`` of such a row is the ± of the published line
(``published_std``), not a line of its own: a spread is shown, never gated. The ``note`` column says how a
linear number was obtained (splits, CV folds, K rule, and whether the grid is the paper's or a thinned one).
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
from dml_core.published import PublishedPaper, PublishedRow, find_row
from dml_core.linear.plan import TABLE2_ID, linear_plan_paths, load_linear_plan, table2_row_id
from dml_core.linear.results_file import describe_linear_protocol
from dml_core.recipe import load_recipe
from dml_core.results import AnyResults, LinearResultsFile, ResultsFile, load_results
from dml_core.tables.tolerances import Tolerances

# A published ``<metric>_std`` beside ``<metric>`` is the ± of that metric's line (anml Table 2).
SPREAD_SUFFIX = "_std"

# Published metrics that describe training cost, not retrieval quality: shown in the training-time table.
TIMING_METRICS = frozenset({"iterations_per_second", "training_hours"})

WITHIN, BELOW, ABOVE, NOT_RUN, NOT_EVALUATED = "within tolerance", "below", "above", "not run", "not evaluated"

COLUMNS = (
    "table", "row", "method", "dataset", "recipe", "seeds", "metric",
    "published", "reproduced", "std", "delta", "tolerance", "status", "published_std", "note",
)  # fmt: skip


TIMING_COLUMNS = (
    "recipe", "dataset", "device", "seeds", "iterations",
    "published it/s", "ours it/s", "published hours", "ours hours",
)  # fmt: skip


@dataclass(frozen=True)
class LoadedResults:
    """A validated results file and where it was read from (for error messages)."""

    path: Path
    results: AnyResults


def status_of(published: float, reproduced: float | None, tolerance: float) -> str:
    """Where a reproduced number lies against the published one, ``tolerance`` points either side.

    >>> [status_of(55.1, r, 1.5) for r in (55.1, 53.6, 53.5, 56.7, None)]
    ['within tolerance', 'within tolerance', 'below', 'above', 'not run']
    """
    if reproduced is None or math.isnan(reproduced):
        return NOT_RUN
    delta = reproduced - published
    # Rounded to the printed precision so 53.6 - 55.1 = -1.5000000000000036 counts as within 1.5.
    if round(abs(delta), 9) <= tolerance:
        return WITHIN
    return BELOW if delta < 0 else ABOVE


def load_results_folder(folder: str | Path, smoke: bool) -> list[LoadedResults]:
    """Every ``*.json`` results file in ``folder`` (none when the folder does not exist), validated.

    Smoke and full runs never mix: a file whose ``smoke`` flag differs from ``smoke`` is an error.
    """
    folder = Path(folder)
    loaded = [LoadedResults(path, load_results(path)) for path in sorted(folder.glob("*.json"))]
    for item in loaded:
        if item.results.smoke != smoke:
            expected = "smoke" if smoke else "full (not smoke)"
            raise InputError(
                f"{item.path}: field smoke: expected {expected} results in {folder}, found {item.results.smoke}"
            )
    seen: dict[tuple[str, int], Path] = {}
    for item in loaded:
        key = (item.results.run_id, item.results.seed)
        if key in seen:
            raise InputError(
                f"{item.path}: recipe {key[0]} seed {key[1]} is also in {seen[key]}; keep one results file per run"
            )
        seen[key] = item.path
    return loaded


def planned_targets(recipes_dir: str | Path, key: str) -> dict[tuple[str, str], list[str]]:
    """``(table, row) -> recipe ids`` for every recipe under ``<recipes_dir>/<key>/``."""
    planned: dict[tuple[str, str], list[str]] = defaultdict(list)
    for path in sorted((Path(recipes_dir) / key).glob("*.yaml")):
        recipe = load_recipe(path)
        for target in recipe.targets:
            planned[(target.table, target.row)].append(recipe.id)
    return dict(planned)


def planned_linear_targets(recipes_dir: str | Path, key: str) -> dict[tuple[str, str], list[str]]:
    """``(table2, row) -> [row]`` for every method of every plan under ``<recipes_dir>/<key>/linear/``: a
    linear run's id is the id of the Table 2 row it reproduces."""
    planned: dict[tuple[str, str], list[str]] = {}
    for path in linear_plan_paths(recipes_dir, key):
        plan = load_linear_plan(path)
        for method in plan.methods:
            row = table2_row_id(method, plan.dataset)
            planned[(TABLE2_ID, row)] = [row]
    return planned


def runs_by_target(
    paper: PublishedPaper, loaded: Iterable[LoadedResults]
) -> dict[tuple[str, str, str], list[ResultsFile]]:
    """``(table, row, recipe id) -> its runs (one per seed)``; a results file of another paper is an error."""
    runs: dict[tuple[str, str, str], list[ResultsFile]] = defaultdict(list)
    for item in loaded:
        results = item.results
        if results.paper != paper.paper.key:
            raise InputError(f"{item.path}: field paper: expected {paper.paper.key!r}, found {results.paper!r}")
        for target in results.targets:
            try:
                find_row(paper, target.table, target.row)
            except InputError as error:
                raise InputError(f"{item.path}: field targets: {error}") from None
            runs[(target.table, target.row, results.run_id)].append(results)
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


def linear_note(runs: Iterable[AnyResults]) -> str:
    """How the linear runs of a line were obtained (distinct descriptions, ``; ``-joined); "" for deep runs."""
    return "; ".join(sorted({describe_linear_protocol(r.protocol) for r in runs if isinstance(r, LinearResultsFile)}))


def _lines_for(
    table_id: str, row: PublishedRow, recipe: str | None, runs: list[AnyResults], tolerances: Tolerances
) -> list[dict]:
    seeds = ",".join(str(seed) for seed in sorted(r.seed for r in runs)) if runs else ""
    note = linear_note(runs)
    lines = []
    for metric, published in row.metrics.items():
        if metric in TIMING_METRICS or is_spread_metric(metric, row.metrics):
            continue
        # One value per deep run (its selected number), one per split for a linear run.
        samples = [r.metric_samples(metric) for r in runs]
        values = [value for run_values in samples for value in run_values]
        tolerance = tolerances.for_metric(metric)
        mean, std = pooled(values) if values else (math.nan, math.nan)
        status = status_of(published, mean, tolerance)
        if runs and not values:
            status = NOT_EVALUATED
        elif runs and not all(samples):
            raise InputError(f"recipe {recipe}: metric {metric} is in some seeds' results but not in others")
        lines.append(
            {
                "table": table_id,
                "row": row.id,
                "method": row.method,
                "dataset": row.dataset,
                "recipe": recipe,
                "seeds": seeds,
                "metric": metric,
                "published": published,
                "reproduced": mean,
                "std": std,
                "delta": mean - published,
                "tolerance": tolerance,
                "status": status,
                "published_std": row.metrics.get(metric + SPREAD_SUFFIX, math.nan),
                "note": note,
            }
        )
    return lines


def join(
    paper: PublishedPaper,
    loaded: Iterable[LoadedResults],
    tolerances: Tolerances,
    planned: Mapping[tuple[str, str], list[str]] | None = None,
) -> pd.DataFrame:
    """One line per (published row, recipe, metric) for every row that results or recipes target.

    ``reproduced`` is the mean of the runs' selected numbers (``selection.metrics``), ``std`` their sample
    standard deviation, ``delta`` reproduced minus published. Training-cost metrics are left to
    :func:`timing_frame`.
    """
    runs = runs_by_target(paper, loaded)
    keys = set(runs)
    for (table_id, row_id), recipes in (planned or {}).items():
        find_row(paper, table_id, row_id)  # a recipe naming a row that does not exist is an error here too
        keys.update((table_id, row_id, recipe) for recipe in recipes)
    order = {table.id: index for index, table in enumerate(paper.tables)}
    row_order = {(table.id, row.id): index for table in paper.tables for index, row in enumerate(table.rows)}
    lines: list[dict] = []
    for table_id, row_id, recipe in sorted(keys, key=lambda k: (order[k[0]], row_order[k[:2]], k[2])):
        row = find_row(paper, table_id, row_id)
        lines.extend(_lines_for(table_id, row, recipe, runs.get((table_id, row_id, recipe), []), tolerances))
    return pd.DataFrame(lines, columns=list(COLUMNS))


def timing_frame(
    paper: PublishedPaper,
    loaded: Iterable[LoadedResults],
    planned: Mapping[tuple[str, str], list[str]] | None = None,
) -> pd.DataFrame:
    """Training cost per recipe: our iterations/s and hours (mean over seeds) beside the published ones.

    Published values come from the ``training_time`` table row a recipe targets (blank when it targets none);
    a recipe that targets such a row but has no results yet is listed as "not run". Hours are training-loop
    wall time (evaluations excluded), i.e. the results' ``timing.train_seconds``.
    """
    timing_tables = {table.id for table in paper.tables if table.kind == "training_time"}
    published: dict[str, dict[str, float]] = {}
    for (table_id, row_id), recipes in (planned or {}).items():
        if table_id in timing_tables:
            published.update(dict.fromkeys(recipes, find_row(paper, table_id, row_id).metrics))
    by_recipe: dict[str, list[ResultsFile]] = {recipe: [] for recipe in published}
    for item in loaded:
        if not isinstance(item.results, ResultsFile):
            continue  # linear runs have no training loop: their seconds are in the linear runs table
        by_recipe.setdefault(item.results.recipe.id, []).append(item.results)
        for target in item.results.targets:
            if target.table in timing_tables:
                published[item.results.recipe.id] = find_row(paper, target.table, target.row).metrics
    lines = []
    for recipe, runs in sorted(by_recipe.items()):
        theirs = published.get(recipe, {})
        lines.append(
            {
                "recipe": recipe,
                "dataset": runs[0].dataset if runs else "",
                "device": ", ".join(sorted({_device_name(r) for r in runs})) if runs else NOT_RUN,
                "seeds": ",".join(str(s) for s in sorted(r.seed for r in runs)),
                "iterations": runs[0].timing.iterations if runs else math.nan,
                "published it/s": theirs.get("iterations_per_second", math.nan),
                "ours it/s": pooled([r.timing.iterations_per_second for r in runs])[0] if runs else math.nan,
                "published hours": theirs.get("training_hours", math.nan),
                "ours hours": pooled([r.timing.train_seconds / 3600 for r in runs])[0] if runs else math.nan,
            }
        )
    return pd.DataFrame(lines, columns=list(TIMING_COLUMNS))


def _device_name(results: ResultsFile) -> str:
    """The GPU's name (``environment.gpu``), else the torch device the run used (``cpu``)."""
    return results.environment.get("gpu") or results.environment.get("device") or "unknown"
