import numpy as np
from sklearn.neighbors import KNeighborsClassifier

from dml_core.linear.knn_accuracy import knn_accuracy_by_k, knn_accuracy_by_k_many, knn_predictions_by_k


def test_parity_with_scikit_learn_for_every_k():
    rng = np.random.default_rng(0)
    train_X, test_X = rng.normal(size=(60, 3)), rng.normal(size=(25, 3))
    train_y, test_y = rng.integers(0, 4, 60) * 10 + 1, rng.integers(0, 4, 25) * 10 + 1  # labels 1, 11, 21, 31
    predictions = knn_predictions_by_k(train_X, train_y, test_X, max_k=40)
    accuracy = knn_accuracy_by_k(train_X, train_y, test_X, test_y, max_k=40)
    assert predictions.shape == (25, 40) and accuracy.shape == (40,)
    for k in range(1, 41):
        reference = KNeighborsClassifier(n_neighbors=k, algorithm="brute").fit(train_X, train_y)
        np.testing.assert_array_equal(predictions[:, k - 1], reference.predict(test_X))
        assert accuracy[k - 1] == np.mean(reference.predict(test_X) == test_y)


def test_vote_ties_go_to_the_smallest_label_and_k_is_capped():
    train_X, train_y = np.array([[1.0], [-2.0], [5.0]]), np.array([9, 4, 9])
    predictions = knn_predictions_by_k(train_X, train_y, np.array([[0.0]]), max_k=40)
    # K=1: 9 (distance 1); K=2: one vote each, the smaller label 4 wins; K=3: 9.
    assert predictions.tolist() == [[9, 4, 9]]


def test_many_maps_at_once_give_the_accuracies_of_one_map_at_a_time():
    # Duplicated rows, a rank-deficient map and a scaled identity make exact distance ties: the ranking rule
    # (distance, then training index) must match rank_neighbours' wherever they occur.
    rng = np.random.default_rng(0)
    train_X = np.round(rng.normal(size=(60, 4)), 1)
    train_X[30:40] = train_X[:10]
    test_X = np.concatenate([train_X[:5], np.round(rng.normal(size=(15, 4)), 1)])
    train_y, test_y = rng.integers(0, 3, 60), rng.integers(0, 3, 20)
    transforms = np.stack(
        [rng.normal(size=(4, 4)) for _ in range(6)] + [np.diag([1.0, 1.0, 0.0, 0.0]), 3.0 * np.eye(4)]
    )
    many = knn_accuracy_by_k_many(train_X, train_y, test_X, test_y, transforms)
    assert many.shape == (8, 40)
    for accuracy, L in zip(many, transforms, strict=True):
        np.testing.assert_array_equal(accuracy, knn_accuracy_by_k(train_X @ L.T, train_y, test_X @ L.T, test_y))
