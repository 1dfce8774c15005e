"""kNN classification accuracy for every K = 1..max_k from one neighbour search.

Neighbours come from ``dml_core.evaluation.knn.rank_neighbours`` (exact, ties by training index).
Votes are uniform; a tie between classes goes to the smallest class label, as in scikit-learn's
``KNeighborsClassifier``.

``knn_accuracy_by_k_many`` scores many learned maps on the same samples at once (the grid search's
thousands of fits per fold); it repeats ``rank_neighbours``' CPU arithmetic (float32 ``|g|^2 - 2 q.g``
from the same GEMM, ties by training index) and so gives exactly the accuracies of ``knn_accuracy_by_k``
(tested against it).
"""

from __future__ import annotations

import numpy as np
import torch

from dml_core.evaluation.knn import rank_neighbours

# Table 2 reports the best K in 1..40.
TABLE2_MAX_K = 40

# knn_accuracy_by_k_many scores this many maps per pass (votes of 256 maps x 100 queries x 40 K x 3 classes:
# ~25 MB of int64).
MAPS_PER_CHUNK = 256


def knn_predictions_by_k(
    train_X: np.ndarray, train_y: np.ndarray, test_X: np.ndarray, max_k: int = TABLE2_MAX_K
) -> np.ndarray:
    """(n_test, k) predicted labels, column k-1 for K = k; k = min(max_k, n_train).

    >>> train_X, train_y = np.array([[0.0], [1.0], [5.0]]), np.array([3, 3, 7])
    >>> knn_predictions_by_k(train_X, train_y, np.array([[4.0]]), 3).tolist()
    [[7, 3, 3]]
    """
    k = min(max_k, len(train_X))
    classes, train_codes = np.unique(train_y, return_inverse=True)
    ranking = rank_neighbours(
        torch.from_numpy(np.ascontiguousarray(test_X, dtype=np.float32)),
        torch.from_numpy(np.ascontiguousarray(train_X, dtype=np.float32)),
        torch.full((len(test_X),), -1),
        torch.from_numpy(train_codes),
        k,
    )
    return _vote(classes, train_codes, ranking.neighbours)


def _vote(classes: np.ndarray, train_codes: np.ndarray, neighbours: np.ndarray) -> np.ndarray:
    """(..., n_test, k) predicted labels from the (..., n_test, k) ranked neighbours, column k-1 for K = k."""
    votes = np.eye(len(classes), dtype=np.int64)[train_codes[neighbours]]  # (..., n_test, k, C)
    return classes[np.argmax(np.cumsum(votes, axis=-2), axis=-1)]  # argmax keeps the first (smallest) tied class


def knn_accuracy_by_k(
    train_X: np.ndarray,
    train_y: np.ndarray,
    test_X: np.ndarray,
    test_y: np.ndarray,
    max_k: int = TABLE2_MAX_K,
) -> np.ndarray:
    """Accuracy in [0, 1] for K = 1..min(max_k, n_train), index K-1.

    >>> train_X, train_y = np.array([[0.0], [1.0], [5.0]]), np.array([3, 3, 7])
    >>> knn_accuracy_by_k(train_X, train_y, np.array([[4.0]]), np.array([7]))
    array([1., 0., 0.])
    """
    predictions = knn_predictions_by_k(train_X, train_y, test_X, max_k)
    return np.mean(predictions == np.asarray(test_y)[:, None], axis=0)


def knn_accuracy_by_k_many(
    train_X: np.ndarray,
    train_y: np.ndarray,
    test_X: np.ndarray,
    test_y: np.ndarray,
    transforms: np.ndarray,
    max_k: int = TABLE2_MAX_K,
) -> np.ndarray:
    """(P, k) accuracies: row p is ``knn_accuracy_by_k(train_X @ L.T, train_y, test_X @ L.T, test_y)`` for
    ``L = transforms[p]``, the same numbers (same float32 distances, same ranking rule), all maps at once.

    >>> train_X, train_y = np.array([[0.0], [1.0], [5.0]]), np.array([3, 3, 7])
    >>> knn_accuracy_by_k_many(train_X, train_y, np.array([[4.0]]), np.array([7]), np.ones((2, 1, 1)), 3)
    array([[1., 0., 0.],
           [1., 0., 0.]])
    """
    k = min(max_k, len(train_X))
    classes, train_codes = np.unique(train_y, return_inverse=True)
    test_y = np.asarray(test_y)
    accuracies = []
    for start in range(0, len(transforms), MAPS_PER_CHUNK):  # bounds the (maps, n_test, k, C) votes
        transposed = np.swapaxes(transforms[start : start + MAPS_PER_CHUNK], -1, -2)
        gallery = torch.from_numpy(np.ascontiguousarray(train_X @ transposed, dtype=np.float32))  # (P, n, d')
        queries = np.ascontiguousarray(test_X @ transposed, dtype=np.float32)
        # rank_neighbours' CPU distances: [q, 1] . [-2 g, |g|^2], with |g|^2 summed by torch as it sums it.
        left = np.concatenate([queries, np.ones((*queries.shape[:-1], 1), dtype=np.float32)], axis=-1)
        right = torch.cat([-2.0 * gallery, gallery.pow(2).sum(-1, keepdim=True)], dim=-1).numpy()
        distances = left @ np.swapaxes(right, -1, -2)  # (P, n_test, n_train)
        neighbours = np.argsort(distances, axis=-1, kind="stable")[..., :k]  # by distance, then training index
        predictions = _vote(classes, train_codes, neighbours)
        accuracies.append(np.mean(predictions == test_y[:, None], axis=-2))
    return np.concatenate(accuracies)
