"""The metrics an evaluation can report, each declaring the shared work it needs.

Adding a metric is an entry here and its name in the recipe schema's list (``recipes.settings.EvaluationSettings.
metrics``, which tests/test_registry.py holds equal to these names); a metric a paper publishes also needs its value's
key in ``published.FIXED_METRICS``. The evaluator does each piece of shared work (the kNN ranking, the neighbours, the
clustering) once for every metric that asks for it. Only numpy is loaded here, so that the names (:data:`MetricName`)
can be read without loading the evaluation stack.

>>> METRIC_NAMES
('recall', 'map_at_r', 'r_precision', 'nmi', 'f1')
>>> sorted(needs_of(chosen_metrics(["recall", "f1"])))
['clustering', 'ranking']
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from typing import Literal

import numpy as np

from dml_core.evaluation import metrics as M
from dml_core.registry import Registry

RANKING = "ranking"  # each query's nearest same-class rank
NEIGHBOURS = "neighbours"  # also each query's R nearest neighbours, R its number of same-class items
CLUSTERING = "clustering"  # k-means on every evaluated item
RETRIEVAL_WORK = frozenset({RANKING, NEIGHBOURS})  # both come from the one kNN search


@dataclass(frozen=True)
class NeighbourRanking:
    """What the retrieval metrics need, per query (numpy arrays): the kNN search's output (``knn``)."""

    first_positive_rank: np.ndarray  # (n_q,) 0-based rank of the nearest same-class item; -1 if none
    num_positives: np.ndarray  # (n_q,) same-class gallery items other than the query itself (R)
    neighbours: np.ndarray  # (n_q, k) gallery indices, nearest first
    neighbour_is_positive: np.ndarray  # (n_q, k) whether each neighbour has the query's class
    search: str  # how the ranking was searched (results files record it)


@dataclass(frozen=True)
class SharedWork:
    """What the evaluator computed once, for every metric that needs it (None: no chosen metric asked for it)."""

    ranking: NeighbourRanking | None = None  # with NEIGHBOURS, its neighbour columns reach every query's R
    recall_ks: tuple[int, ...] = ()
    labels: np.ndarray | None = None  # class codes of the clustered items
    clusters: np.ndarray | None = None  # their k-means assignment


@dataclass(frozen=True)
class Computed:
    """One metric's values (percent) and, for a mean over queries, its terms by ``PerQuery`` field name."""

    values: dict[str, float]
    terms: dict[str, np.ndarray] = field(default_factory=dict)


@dataclass(frozen=True)
class Metric:
    """One reportable metric: values in percent, keyed as ``papers/<key>/published.yaml`` keys them."""

    name: str  # as recipes (evaluation.metrics) and `dml evaluate-embeddings --metrics` name it
    needs: frozenset[str]
    compute: Callable[[SharedWork], Computed]
    reports: str  # the key of its value in results and published tables; "{k}": one value per Recall@K

    def value_names(self, recall_ks: Iterable[int] = ()) -> list[str]:
        """The keys of the values it reports for a run with these Ks.

        >>> METRICS["recall"].value_names([1, 10]), METRICS["nmi"].value_names([1, 10])
        (['R@1', 'R@10'], ['NMI'])
        """
        return [self.reports.format(k=k) for k in recall_ks] if "{k}" in self.reports else [self.reports]


def _recall(work: SharedWork) -> Computed:
    ranks = work.ranking.first_positive_rank
    return Computed({f"R@{k}": 100.0 * value for k, value in M.recall_at_k(ranks, work.recall_ks).items()})


def _map_at_r(work: SharedWork) -> Computed:
    terms = M.average_precision_at_r(work.ranking.neighbour_is_positive, work.ranking.num_positives)
    return Computed({"MAP@R": 100.0 * M.mean_over_queries(terms)}, {"average_precision_at_r": terms})


def _r_precision(work: SharedWork) -> Computed:
    terms = M.r_precision_per_query(work.ranking.neighbour_is_positive, work.ranking.num_positives)
    return Computed({"RP": 100.0 * M.mean_over_queries(terms)}, {"r_precision": terms})


def _nmi(work: SharedWork) -> Computed:
    return Computed({"NMI": 100.0 * M.normalized_mutual_information(work.labels, work.clusters)})


def _f1(work: SharedWork) -> Computed:
    return Computed({"F1": 100.0 * M.clustering_f1(work.labels, work.clusters)})


# Registry order is the order of the reported values.
_METRICS = {
    metric.name: metric
    for metric in (
        Metric("recall", frozenset({RANKING}), _recall, "R@{k}"),
        Metric("map_at_r", frozenset({NEIGHBOURS}), _map_at_r, "MAP@R"),
        Metric("r_precision", frozenset({NEIGHBOURS}), _r_precision, "RP"),
        Metric("nmi", frozenset({CLUSTERING}), _nmi, "NMI"),
        Metric("f1", frozenset({CLUSTERING}), _f1, "F1"),
    )
}
METRICS: Registry[Metric] = Registry("metric", "metrics", _METRICS)  # `dml evaluate-embeddings --metrics` too
METRIC_NAMES: tuple[str, ...] = tuple(METRICS)
MetricName = Literal[METRIC_NAMES]  # every registered name, no other, as a type


def chosen_metrics(names: Iterable[str]) -> list[Metric]:
    """The registered metrics named, in registry order, each once; an unknown name is an ``InputError``.

    >>> [metric.name for metric in chosen_metrics(["nmi", "recall", "nmi"])]
    ['recall', 'nmi']
    """
    names = set(names)
    for name in sorted(names):
        METRICS.lookup(name)  # an unknown name: the registries' one error
    return [metric for name, metric in METRICS.items() if name in names]


def needs_of(metrics: Iterable[Metric]) -> frozenset[str]:
    """The shared work these metrics need together."""
    return frozenset().union(*(metric.needs for metric in metrics))
