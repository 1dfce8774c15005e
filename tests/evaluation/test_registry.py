"""The metric registry: each metric declares its shared work; the evaluator serves what is registered, once."""

import subprocess
import sys
from typing import get_args

import numpy as np
import pytest

from dml_core.errors import InputError
from dml_core.evaluation import evaluate, evaluator, registry
from dml_core.evaluation.registry import (
    CLUSTERING,
    METRIC_NAMES,
    METRICS,
    RANKING,
    RETRIEVAL_WORK,
    Computed,
    Metric,
    MetricName,
    chosen_metrics,
)


def _data(seed=0, n=60, classes=6):
    rng = np.random.default_rng(seed)
    return rng.normal(size=(n, 8)).astype(np.float32), np.arange(n) % classes


def test_every_metric_is_served_by_one_stage_and_named_for_the_recipes():
    assert get_args(MetricName) == METRIC_NAMES == tuple(METRICS)
    for metric in METRICS.values():
        assert metric.needs and (metric.needs <= RETRIEVAL_WORK or metric.needs <= {CLUSTERING}), metric.name


def test_each_metric_reports_the_values_it_names():
    """``value_names`` (what the results gate expects of a run) are the keys ``evaluate`` writes, metric by metric."""
    x, y = _data()
    for metric in METRICS.values():
        found = evaluate(x, y, (1, 2, 4), metrics=[metric.name]).metrics
        assert list(found) == metric.value_names((1, 2, 4)), metric.name


def test_unknown_names_are_refused_listing_the_registered_ones():
    with pytest.raises(
        InputError,
        match=r"field metrics: unknown metric 'mrr'; expected one of f1, map_at_r, nmi, r_precision, recall$",
    ):
        chosen_metrics(["recall", "mrr"])


def test_a_new_metric_is_one_registry_entry(monkeypatch):
    """A registered metric is computed from the shared ranking and reported beside the others."""
    seen = []

    def nearest_is_positive(work):
        seen.append(work.ranking)
        return Computed({"P@1": 100.0 * float(np.mean(work.ranking.first_positive_rank == 0))})

    monkeypatch.setitem(
        registry.METRICS, "precision_at_1", Metric("precision_at_1", frozenset({RANKING}), nearest_is_positive, "P@1")
    )
    x, y = _data()
    result = evaluate(x, y, (1,), metrics=["recall", "precision_at_1"])
    assert result.metrics["P@1"] == result.metrics["R@1"]
    assert len(seen) == 1 and "knn" in result.protocol and "clustering" not in result.protocol


def test_shared_work_is_done_once_and_only_when_a_metric_needs_it(monkeypatch):
    calls = {"ranking": 0, "kmeans": 0}
    rank, assign = evaluator.rank_within_set, evaluator.kmeans_assign

    def counted_rank(*args, **kwargs):
        calls["ranking"] += 1
        return rank(*args, **kwargs)

    def counted_assign(*args, **kwargs):
        calls["kmeans"] += 1
        return assign(*args, **kwargs)

    monkeypatch.setattr(evaluator, "rank_within_set", counted_rank)
    monkeypatch.setattr(evaluator, "kmeans_assign", counted_assign)
    x, y = _data()
    evaluate(x, y, (1,))
    assert calls == {"ranking": 1, "kmeans": 1}
    recall_only = evaluate(x, y, (1,), metrics=["recall"])
    assert calls == {"ranking": 2, "kmeans": 1}
    assert recall_only.protocol["knn"]["neighbours_for_map_at_r"] == 0  # no metric asked for the R neighbours
    evaluate(x, y, metrics=["nmi", "f1"])
    assert calls == {"ranking": 2, "kmeans": 2}


def test_the_registry_loads_without_the_evaluation_stack():
    """The recipe schema takes the metric names from the registry: no torch, faiss or scikit-learn for that."""
    code = (
        "import sys\nfrom dml_core.evaluation.registry import MetricName\n"
        "print(sorted(m for m in ('torch', 'faiss', 'sklearn', 'scipy') if m in sys.modules))"
    )
    loaded = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    assert loaded.strip() == "[]"
