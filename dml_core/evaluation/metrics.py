"""Evaluation metrics as pure functions on numpy arrays. Values are fractions in [0, 1].

Retrieval metrics take what ``knn.rank_neighbours`` computes; clustering metrics take class labels and
cluster assignments. Queries without any same-class gallery item are left out of the retrieval metrics
(as pytorch-metric-learning does); the evaluator reports how many there were. MAP@R and R-Precision are the
means of per-query terms (``average_precision_at_r``, ``r_precision_per_query``), which the evaluator keeps for
a bootstrap over queries.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np


def recall_at_k(first_positive_rank: np.ndarray, ks: Sequence[int]) -> dict[int, float]:
    """Recall@K in the DML sense: the share of queries with a same-class item among their K nearest.

    ``first_positive_rank`` is the 0-based rank of each query's nearest same-class item (-1: none).

    >>> recall_at_k(np.array([0, 1, 3, -1]), [1, 2, 4])
    {1: 0.3333333333333333, 2: 0.6666666666666666, 4: 1.0}
    """
    ranks = first_positive_rank[first_positive_rank >= 0]
    return {int(k): float(np.mean(ranks < k)) for k in ks}


def _hits_within_r(neighbour_is_positive: np.ndarray, num_positives: np.ndarray):
    keep = num_positives > 0
    hits, r = neighbour_is_positive[keep], np.minimum(num_positives[keep], neighbour_is_positive.shape[1])
    within = np.arange(hits.shape[1])[None, :] < r[:, None]
    return keep, hits & within, r


def _per_query(keep: np.ndarray, values: np.ndarray) -> np.ndarray:
    """``values`` of the kept queries in place, NaN for the queries left out (no same-class item)."""
    full = np.full(len(keep), np.nan)
    full[keep] = values
    return full


def mean_over_queries(per_query: np.ndarray) -> float:
    """The metric: the mean of its per-query terms over the queries that have one (NaN marks the others).

    >>> mean_over_queries(np.array([0.5, np.nan, 0.0]))
    0.25
    """
    return float(np.mean(per_query[~np.isnan(per_query)]))


def r_precision_per_query(neighbour_is_positive: np.ndarray, num_positives: np.ndarray) -> np.ndarray:
    """Each query's R-Precision term: the share of same-class items among its first R neighbours (NaN for a
    query without any same-class item).

    >>> r_precision_per_query(np.array([[True, False, True], [False, True, False], [False, False, False]]),
    ...                       np.array([2, 1, 0]))
    array([0.5, 0. , nan])
    """
    keep, hits, r = _hits_within_r(neighbour_is_positive, num_positives)
    return _per_query(keep, hits.sum(1) / r)


def r_precision(neighbour_is_positive: np.ndarray, num_positives: np.ndarray) -> float:
    """R-Precision (Musgrave et al. 2020): the share of same-class items among the first R neighbours,
    R being the number of same-class items in the gallery (the query itself excluded).

    >>> r_precision(np.array([[True, False, True], [False, True, False]]), np.array([2, 1]))
    0.25
    """
    return mean_over_queries(r_precision_per_query(neighbour_is_positive, num_positives))


def average_precision_at_r(neighbour_is_positive: np.ndarray, num_positives: np.ndarray) -> np.ndarray:
    """Each query's MAP@R term, (1/R) * sum_{i<=R} P(i) * rel(i) (NaN for a query without same-class item).

    >>> average_precision_at_r(np.array([[True, False, True], [False, True, False]]), np.array([2, 1]))
    array([0.5, 0. ])
    """
    keep, hits, r = _hits_within_r(neighbour_is_positive, num_positives)
    precision_at_i = np.cumsum(hits, axis=1) / np.arange(1, hits.shape[1] + 1)[None, :]
    return _per_query(keep, (precision_at_i * hits).sum(1) / r)


def map_at_r(neighbour_is_positive: np.ndarray, num_positives: np.ndarray) -> float:
    """MAP@R (Musgrave et al. 2020): mean over queries of (1/R) * sum_{i<=R} P(i) * rel(i), where P(i) is
    the precision among the first i neighbours and rel(i) whether the i-th is of the query's class.

    >>> map_at_r(np.array([[True, False, True], [False, True, False]]), np.array([2, 1]))
    0.25
    """
    return mean_over_queries(average_precision_at_r(neighbour_is_positive, num_positives))


@dataclass(frozen=True)
class Contingency:
    """The class-by-cluster count table: its non-zero cells in row-major order (``rows``: class, ``cols``: cluster,
    each the position of the label in sorted order) and its margins (items per class, per cluster)."""

    rows: np.ndarray
    cols: np.ndarray
    counts: np.ndarray
    class_counts: np.ndarray
    cluster_counts: np.ndarray


def contingency(labels: np.ndarray, clusters: np.ndarray) -> Contingency:
    """The contingency table of ``labels`` against ``clusters``, counted with numpy (scikit-learn's
    ``contingency_matrix`` gives the same cells in the same order, and takes a second or two to import in every
    process that evaluates).

    >>> table = contingency(np.array([7, 7, 3, 3, 3]), np.array([0, 1, 1, 1, 0]))
    >>> table.rows.tolist(), table.cols.tolist(), table.counts.tolist()
    ([0, 0, 1, 1], [0, 1, 0, 1], [1, 2, 1, 1])
    >>> table.class_counts.tolist(), table.cluster_counts.tolist()
    ([3, 2], [2, 3])
    """
    class_ids, class_index = np.unique(np.asarray(labels).ravel(), return_inverse=True)
    cluster_ids, cluster_index = np.unique(np.asarray(clusters).ravel(), return_inverse=True)
    width = len(cluster_ids)
    cells, counts = np.unique(class_index.astype(np.int64) * width + cluster_index, return_counts=True)
    rows, cols = np.divmod(cells, width)
    return Contingency(
        rows,
        cols,
        counts.astype(np.int64),
        np.bincount(class_index, minlength=len(class_ids)).astype(np.int64),
        np.bincount(cluster_index, minlength=width).astype(np.int64),
    )


def _entropy(counts: np.ndarray) -> float:
    p = counts[counts > 0] / counts.sum()
    return float(-(p * np.log(p)).sum())


def normalized_mutual_information(labels: np.ndarray, clusters: np.ndarray) -> float:
    """NMI with arithmetic normalisation: 2 I(clusters; classes) / (H(clusters) + H(classes)).

    >>> round(normalized_mutual_information(np.array([0, 0, 1, 1]), np.array([5, 5, 7, 7])), 12)
    1.0
    >>> normalized_mutual_information(np.array([0, 0, 1, 1]), np.array([0, 1, 0, 1]))
    0.0
    """
    table = contingency(labels, clusters)
    n = float(table.counts.sum())
    class_counts, cluster_counts = table.class_counts, table.cluster_counts
    h_classes, h_clusters = _entropy(class_counts), _entropy(cluster_counts)
    if h_classes == 0.0 and h_clusters == 0.0:
        return 1.0  # one class and one cluster: identical partitions
    nij = table.counts.astype(np.float64)
    outer = class_counts[table.rows].astype(np.float64) * cluster_counts[table.cols]
    mutual = float(np.sum(nij / n * (np.log(nij * n) - np.log(outer))))
    return max(0.0, 2.0 * mutual / (h_classes + h_clusters))


def _pairs(counts: np.ndarray) -> float:
    counts = counts.astype(np.float64)
    return float(np.sum(counts * (counts - 1) / 2))


def clustering_f1(labels: np.ndarray, clusters: np.ndarray) -> float:
    """Clustering F1 of Song et al. 2016 by pair counting: precision and recall of "same cluster" as a
    prediction of "same class" over all unordered pairs of items.

    >>> round(clustering_f1(np.array([0, 0, 0, 1, 1]), np.array([0, 0, 1, 1, 1])), 4)
    0.5
    """
    table = contingency(labels, clusters)
    true_positive = _pairs(table.counts)
    predicted = _pairs(table.cluster_counts)
    actual = _pairs(table.class_counts)
    if true_positive == 0.0:
        return 0.0
    precision, recall = true_positive / predicted, true_positive / actual
    return 2 * precision * recall / (precision + recall)
