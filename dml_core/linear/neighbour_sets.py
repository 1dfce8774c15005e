"""The similar sets S_i and dissimilar sets D_i of anml section 7.1.2, as boolean (n, n) masks.

Row i marks the members of the set of query x_i; a query is never in its own set.
- LANML+ and PNCA: S_i = every other sample of class y_i, D_i = every sample of another class.
- LANML-: S_i = the ``k`` Euclidean nearest neighbours of x_i within class y_i (all of them if the
  class is smaller), D_i as above.
"""

from __future__ import annotations

import numpy as np


def same_class_sets(labels: np.ndarray) -> np.ndarray:
    """S_i = all samples of class y_i except x_i.

    >>> same_class_sets(np.array([0, 0, 1])).astype(int).tolist()
    [[0, 1, 0], [1, 0, 0], [0, 0, 0]]
    """
    labels = np.asarray(labels)
    same = labels[:, None] == labels[None, :]
    np.fill_diagonal(same, False)
    return same


def different_class_sets(labels: np.ndarray) -> np.ndarray:
    """D_i = all samples whose class differs from y_i.

    >>> different_class_sets(np.array([0, 0, 1])).astype(int).tolist()
    [[0, 0, 1], [0, 0, 1], [1, 1, 0]]
    """
    labels = np.asarray(labels)
    return labels[:, None] != labels[None, :]


def nearest_same_class_sets(X: np.ndarray, labels: np.ndarray, k: int) -> np.ndarray:
    """S_i = the ``k`` nearest same-class samples of x_i under the Euclidean metric.

    Equal distances go to the smaller sample index, so the sets are deterministic.

    >>> X = np.array([[0.0], [1.0], [3.0], [10.0]])
    >>> nearest_same_class_sets(X, np.array([0, 0, 0, 1]), 1).astype(int).tolist()
    [[0, 1, 0, 0], [1, 0, 0, 0], [0, 1, 0, 0], [0, 0, 0, 0]]
    """
    if k < 1:
        raise ValueError(f"nearest_same_class_sets: k must be >= 1, got {k}")
    same = same_class_sets(labels)
    squared = np.sum((X[:, None, :] - X[None, :, :]) ** 2, axis=-1)
    squared = np.where(same, squared, np.inf)
    order = np.argsort(squared, axis=1, kind="stable")[:, :k]
    chosen = np.zeros_like(same)
    np.put_along_axis(chosen, order, True, axis=1)
    return chosen & same
