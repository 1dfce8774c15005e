import numpy as np

from dml_core.linear.neighbour_sets import different_class_sets, nearest_same_class_sets, same_class_sets


def test_sets_partition_the_other_samples():
    y = np.array([2, 0, 2, 1, 0, 2])
    same, different = same_class_sets(y), different_class_sets(y)
    assert not np.any(same & different)
    assert np.all((same | different) == ~np.eye(6, dtype=bool))


def test_nearest_same_class_neighbours_by_hand():
    X = np.array([[0.0], [1.0], [1.5], [4.0], [0.2], [9.0]])
    y = np.array([0, 0, 0, 0, 1, 1])
    chosen = nearest_same_class_sets(X, y, 2)
    assert np.flatnonzero(chosen[0]).tolist() == [1, 2]
    assert np.flatnonzero(chosen[3]).tolist() == [1, 2]
    assert np.flatnonzero(chosen[4]).tolist() == [5]  # the class has one other member only
    assert not np.any(chosen & ~same_class_sets(y))
    assert chosen.sum(axis=1).tolist() == [2, 2, 2, 2, 1, 1]
