"""The 95% bootstrap interval over test queries of a single-seed deep run, from the per-query companion file
beside its results file (``dml_core.query_terms_file``): the noise of a number when only one seed was run.

The interval is of the selected evaluation (the number the tables show). Before it is used, the companion is
checked against its results file: its sha256 (``queries.sha256``), and the mean of its per-query terms against
every retrieval metric the results file reports for that evaluation. A missing, altered or mismatched companion
is an ``InputError`` naming the file, never silently used or silently skipped. A results file without a
companion (written before per-query terms were stored), a linear run, or a metric without per-query terms (NMI,
F1) has no interval.
"""

from __future__ import annotations

from collections.abc import Iterable
from pathlib import Path

from dml_core.errors import InputError
from dml_core.evaluation.bootstrap import Interval, bootstrap_intervals
from dml_core.query_terms_file import read_query_terms
from dml_core.results import AnyResults, ResultsFile
from dml_core.tables.gate.join import LoadedResults, run_variant

# Per-query terms are stored in float32: their mean matches the results file's float64 metric to well within this.
AGREEMENT_POINTS = 1e-3


def _run_key(results: ResultsFile) -> tuple[str, str, int]:
    return results.run_id, run_variant(results), results.seed


class QueryBootstrap:
    """``PerQueryIntervals`` over the results files of one folder (``load_results_folder``'s list)."""

    def __init__(self, loaded: Iterable[LoadedResults]) -> None:
        self.paths = {_run_key(item.results): item.path for item in loaded if isinstance(item.results, ResultsFile)}
        self._intervals: dict[tuple[str, str, int], dict[str, Interval]] = {}

    def interval(self, results: AnyResults, metric: str) -> Interval | None:
        if not isinstance(results, ResultsFile) or results.queries is None:
            return None
        key = _run_key(results)
        if key not in self.paths:
            return None  # not a results file of this folder
        if key not in self._intervals:
            self._intervals[key] = selected_intervals(self.paths[key], results)
        return self._intervals[key].get(metric)


def selected_intervals(path: Path, results: ResultsFile) -> dict[str, Interval]:
    """The bootstrap interval of every retrieval metric of the selected evaluation (none when the companion does
    not hold that evaluation), after checking the companion against the results file."""
    terms = read_query_terms(path, results.queries).get(results.selection.iteration)
    if terms is None:
        return {}
    values = {}
    for metric, reported in results.selection.metrics.items():
        per_query = terms.values(metric)
        if per_query is None:
            continue
        mean = float(per_query.mean()) if len(per_query) else float("nan")
        if not abs(mean - reported) <= AGREEMENT_POINTS:
            raise InputError(
                f"{path.with_name(results.queries.file)}: the per-query terms of iteration "
                f"{results.selection.iteration} give {metric} = {mean:.4f}, but {path.name} reports {reported:.4f}: "
                "they are not this run's"
            )
        values[metric] = per_query
    return bootstrap_intervals(values) if values else {}
