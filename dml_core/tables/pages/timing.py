"""Training time: a paper's training-time table as it prints it (damlrrm Table 8: iterations per second and
hours per method), our measurement beside it with the device, the ratio, and the projection of our speed to the
recipe's schedule; for a paper without such a table, a compact summary of the runs there are.

Our time is the training loop's wall time (evaluations excluded: ``timing.train_seconds``), mean over seeds."""

from __future__ import annotations

import math
from collections import defaultdict
from collections.abc import Iterable, Mapping

import pandas as pd

from dml_core.host_load import shared_host_note
from dml_core.published import PublishedPaper, PublishedTable
from dml_core.readable import NOT_AVAILABLE, readable_duration
from dml_core.results import ResultsFile
from dml_core.tables.gate.join import NOT_RUN, LoadedResults, run_variant
from dml_core.tables.pages.labels import dataset_name, row_label, variant_label

TIMING_COLUMNS = ("row", "recipe", "variant", "dataset", "device", "seeds", "iterations", "iterations_per_second",
                  "train_seconds", "schedule")  # fmt: skip


def readable_rate(iterations_per_second: float) -> str:
    """Iterations per second, or seconds per iteration when that reads better.

    >>> readable_rate(2.2), readable_rate(0.84), readable_rate(0.0000857), readable_rate(float("nan"))
    ('2.20', '0.84', '1 per 3.2 h', '—')
    """
    if math.isnan(iterations_per_second):
        return NOT_AVAILABLE
    if iterations_per_second >= 0.1:
        return f"{iterations_per_second:.2f}"
    return f"1 per {readable_duration(1 / iterations_per_second)}"


def _device(results: ResultsFile) -> str:
    """The GPU's name (``environment.gpu``), else the torch device the run used (``cpu``)."""
    return results.environment.get("gpu") or results.environment.get("device") or "unknown"


def _devices(runs: list[ResultsFile]) -> str:
    """The runs' devices, flagged where a run's host was shared with other work (its time is not the recipe's)."""
    if not runs:
        return NOT_RUN
    devices = ", ".join(sorted({_device(r) for r in runs}))
    return f"{devices} {shared_host_note(r.timing.host_load for r in runs)}".rstrip()


def _schedule(runs: list[ResultsFile], schedules: Mapping[str, int | None], recipe: str) -> float:
    planned = schedules.get(recipe)
    if planned:
        return float(planned)
    full = [r.recipe.content.get("training", {}).get("iterations") for r in runs if not r.smoke]
    return float(full[0]) if full and full[0] else math.nan


def timing_frame(
    paper: PublishedPaper,
    loaded: Iterable[LoadedResults],
    targets: Mapping[tuple[str, str], list[str]] | None = None,
    schedules: Mapping[str, int | None] | None = None,
) -> pd.DataFrame:
    """One line per deep recipe and reading with results, and per planned run a training-time row targets:
    the timing row it reproduces ("" for none), device, seeds, iterations run, our it/s and training-loop seconds
    (means over seeds) and the recipe's schedule (iterations; NaN when it counts epochs)."""
    timing_tables = {table.id for table in paper.tables if table.kind == "training_time"}
    row_of: dict[str, str] = {}
    for (table_id, row_id), recipes in (targets or {}).items():
        if table_id in timing_tables:
            row_of.update(dict.fromkeys(recipes, row_id))
    by_run: dict[tuple[str, str], list[ResultsFile]] = defaultdict(list)
    for recipe in row_of:
        by_run[(recipe, "")]
    for item in loaded:
        if isinstance(item.results, ResultsFile):  # linear runs have no training loop: see the linear runs table
            by_run[(item.results.recipe.id, run_variant(item.results))].append(item.results)
            for target in item.results.targets:
                if target.table in timing_tables:
                    row_of[item.results.recipe.id] = target.row
    lines = []
    for (recipe, variant), runs in sorted(by_run.items()):
        mean = lambda values: sum(values) / len(values) if values else math.nan  # noqa: E731
        lines.append(
            {
                "row": row_of.get(recipe, ""),
                "recipe": recipe,
                "variant": variant,
                "dataset": runs[0].dataset if runs else "",
                "device": _devices(runs),
                "seeds": ",".join(str(s) for s in sorted(r.seed for r in runs)),
                "iterations": mean([r.timing.iterations for r in runs]),
                "iterations_per_second": mean([r.timing.iterations_per_second for r in runs]),
                "train_seconds": mean([r.timing.train_seconds for r in runs]),
                "schedule": _schedule(runs, schedules or {}, recipe),
            }
        )
    return pd.DataFrame(lines, columns=list(TIMING_COLUMNS))


def paper_timing_table(table: PublishedTable, timing: pd.DataFrame) -> pd.DataFrame:
    """The paper's training-time table with ours beside it: one line per printed method (and per reading of
    ours), the paper's columns, our device, speed, the ratio and the projection to the recipe's schedule."""
    lines = []
    for row in table.rows:
        theirs = row.metrics.get("iterations_per_second", math.nan)
        ours = timing[timing["row"] == row.id]
        base = {
            "method": row_label(row),
            "paper: iterations/s": readable_rate(theirs),
            "paper: training time": readable_duration(row.metrics.get("training_hours", math.nan) * 3600),
        }
        if ours.empty:
            lines.append({**base, "ours: device": "no recipe", "ours: iterations/s": NOT_AVAILABLE,
                          "ours / paper": NOT_AVAILABLE, "ours: projected training time": NOT_AVAILABLE})  # fmt: skip
            continue
        for line in ours.itertuples():
            rate = line.iterations_per_second
            projected = line.schedule / rate if rate and not math.isnan(line.schedule) else math.nan
            label = " · ".join(filter(None, [base["method"], variant_label(line.variant)]))
            lines.append(
                {
                    **base,
                    "method": label,
                    "ours: device": line.device,
                    "ours: iterations/s": readable_rate(rate),
                    "ours / paper": NOT_AVAILABLE if math.isnan(rate) else f"{rate / theirs:.2g}×",
                    "ours: projected training time": NOT_AVAILABLE
                    if math.isnan(projected)
                    else f"{readable_duration(projected)} ({line.schedule:,.0f} iterations)",
                }
            )
    return pd.DataFrame(lines)


def timing_summary(timing: pd.DataFrame) -> pd.DataFrame:
    """A paper without a training-time table: one line per run there is (nothing for planned runs)."""
    measured = timing[timing["device"] != NOT_RUN]
    return pd.DataFrame(
        [
            {
                "run": " · ".join(filter(None, [line.recipe, variant_label(line.variant)])),
                "data set": dataset_name(line.dataset),
                "device": line.device,
                "seeds": line.seeds,
                "iterations/s": readable_rate(line.iterations_per_second),
                "training time": readable_duration(line.train_seconds),
                "projected to the schedule": NOT_AVAILABLE
                if math.isnan(line.schedule)
                else readable_duration(line.schedule / line.iterations_per_second),
            }
            for line in measured.itertuples()
        ]
    )
