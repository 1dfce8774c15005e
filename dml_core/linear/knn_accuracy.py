"""kNN classification accuracy for every K = 1..max_k from one neighbour search.

Neighbours come from ``dml_core.evaluation.knn.rank_neighbours`` (exact, ties by training index).
Votes are uniform; a tie between classes goes to the smallest class label, as in scikit-learn's
``KNeighborsClassifier``.
"""

from __future__ import annotations

import numpy as np
import torch

from dml_core.evaluation.knn import rank_neighbours

# Table 2 reports the best K in 1..40.
TABLE2_MAX_K = 40


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
    votes = np.eye(len(classes), dtype=np.int64)[train_codes[ranking.neighbours]]  # (n_test, k, C)
    running_votes = np.cumsum(votes, axis=1)
    return classes[np.argmax(running_votes, axis=2)]  # argmax keeps the first (smallest) tied class


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
