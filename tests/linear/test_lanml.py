import math

import numpy as np
import pytest

from dml_core.linear.lanml import LanmlSets, lanml_objective, lanml_objectives
from dml_core.linear.mahalanobis import distance_gradient_to_metric, pairwise_mahalanobis
from dml_core.linear.neighbour_sets import different_class_sets, same_class_sets


def _objective_of_metric(X, y, M, **parameters):
    return lanml_objective(pairwise_mahalanobis(X, M), same_class_sets(y), different_class_sets(y), **parameters)


def test_hand_computed_value_on_four_points():
    # 1-D points 0, 1 (class 0) and 3, 6 (class 1), M = [[1]] so d = squared difference.
    X, y = np.array([[0.0], [1.0], [3.0], [6.0]]), np.array([0, 0, 1, 1])
    # gamma -> 0: both radii are plain means. Query 0: ds = 1, dd = (9 + 36)/2 = 22.5.
    # Query 1: ds = 1, dd = (4 + 25)/2 = 14.5. Query 2: ds = 9, dd = (9 + 4)/2 = 6.5.
    # Query 3: ds = 9, dd = (36 + 25)/2 = 30.5. Margin 1: hinges 0, 0, 3.5, 0.
    # Omega = (1/4)(1 + 1 + 9 + 9) = 5; lam = 0.5 adds 2.5.
    value, _ = _objective_of_metric(X, y, np.eye(1), gamma1=0.0, gamma2=0.0, lam=0.5, margin=1.0)
    assert value == pytest.approx(3.5 + 2.5)
    # gamma2 = 1 for query 2: dd = -log((e^-9 + e^-4)/2).
    value, _ = _objective_of_metric(X, y, np.eye(1), gamma1=0.0, gamma2=1.0, lam=0.0, margin=1.0)
    dd = [-math.log((math.exp(-a) + math.exp(-b)) / 2) for a, b in ((9, 36), (4, 25), (9, 4), (36, 25))]
    expected = sum(max(0.0, 1.0 + ds - d) for ds, d in zip((1, 1, 9, 9), dd, strict=True))
    assert value == pytest.approx(expected)


def test_zero_metric_costs_the_margin_per_query():
    # M = 0: every distance is 0, every hinge is the margin, Omega = 0. With margin 0 the convex problem
    # would be solved by M = 0, which is why a positive margin is needed.
    rng = np.random.default_rng(0)
    X, y = rng.normal(size=(8, 3)), np.array([0, 0, 0, 1, 1, 1, 2, 2])
    value, _ = _objective_of_metric(X, y, np.zeros((3, 3)), gamma1=-1.0, gamma2=1.0, lam=0.7, margin=1.0)
    assert value == pytest.approx(8.0)
    value, _ = _objective_of_metric(X, y, np.zeros((3, 3)), gamma1=-1.0, gamma2=1.0, lam=0.7, margin=0.0)
    assert value == 0.0


def test_hardest_triplet_limit_of_proposition_3():
    # gamma1 -> -inf, gamma2 -> +inf: hinge(margin + max_j d_ij - min_l d_il), the LMNN-style constraint.
    rng = np.random.default_rng(1)
    X, y = rng.normal(size=(10, 2)), np.repeat([0, 1], 5)
    D = pairwise_mahalanobis(X, np.eye(2))
    S, Dis = same_class_sets(y), different_class_sets(y)
    expected = sum(max(0.0, 1.0 + D[i][S[i]].max() - D[i][Dis[i]].min()) for i in range(10))
    value, _ = lanml_objective(D, S, Dis, gamma1=-1e5, gamma2=1e5, lam=0.0, margin=1.0)
    assert value == pytest.approx(expected, abs=1e-3)


@pytest.mark.parametrize(("gamma1", "gamma2"), [(1.0, 2.0), (-0.5, 4.0), (-8.0, 0.25)])
def test_gradient_matches_finite_differences(gamma1, gamma2):
    rng = np.random.default_rng(2)
    X, y = rng.normal(size=(12, 3)), np.repeat([0, 1, 2], 4)
    A = rng.normal(size=(3, 3))
    M = A @ A.T / 3
    parameters = {"gamma1": gamma1, "gamma2": gamma2, "lam": 0.3, "margin": 1.0}
    _value, G = _objective_of_metric(X, y, M, **parameters)
    gradient = distance_gradient_to_metric(X, G)
    step = 1e-6
    for _ in range(5):
        E = rng.normal(size=(3, 3))
        E = E + E.T
        up = _objective_of_metric(X, y, M + step * E, **parameters)[0]
        down = _objective_of_metric(X, y, M - step * E, **parameters)[0]
        assert np.sum(gradient * E) == pytest.approx((up - down) / (2 * step), rel=1e-5, abs=1e-7)


def test_convex_for_negative_gamma1_lemma_3():
    rng = np.random.default_rng(3)
    X, y = rng.normal(size=(12, 3)), np.repeat([0, 1, 2], 4)
    for _ in range(30):
        A, B = rng.normal(size=(3, 3)), rng.normal(size=(3, 3))
        M1, M2 = A @ A.T, B @ B.T
        parameters = {"gamma1": -rng.uniform(0.1, 4), "gamma2": rng.uniform(0.1, 4), "lam": 0.5}
        f1 = _objective_of_metric(X, y, M1, **parameters)[0]
        f2 = _objective_of_metric(X, y, M2, **parameters)[0]
        middle = _objective_of_metric(X, y, 0.5 * (M1 + M2), **parameters)[0]
        assert middle <= 0.5 * (f1 + f2) + 1e-9


def test_queries_without_similar_samples_are_left_out():
    X, y = np.array([[0.0], [1.0], [5.0]]), np.array([0, 0, 1])  # class 1 has a single sample
    value, G = _objective_of_metric(X, y, np.eye(1), gamma1=0.0, gamma2=0.0, lam=0.0, margin=1.0)
    # Queries 0 and 1: ds = 1, dd = 25 and 16: hinges 0; query 2 has no S_2.
    assert value == 0.0
    assert np.all(G[2] == 0)


def test_a_stack_of_problems_gets_the_arithmetic_of_each_problem_alone():
    rng = np.random.default_rng(3)
    X, y = rng.normal(size=(30, 3)), np.repeat([0, 1, 2], 10)
    metrics = np.stack([np.diag(rng.uniform(0.1, 2.0, 3)) for _ in range(4)])
    distances = pairwise_mahalanobis(X, metrics)
    sets = LanmlSets.from_masks(same_class_sets(y), different_class_sets(y))
    gamma1, gamma2, lam = (
        np.array([0.1, 4.0, 32.0, 1e-13]),
        np.array([2.0, 0.5, 32.0, 1.0]),
        np.array([0.1, 1.5, 0.7, 0.3]),
    )
    values, gradients = lanml_objectives(distances, sets, gamma1, gamma2, lam)
    for p in range(4):
        value, gradient = lanml_objective(
            distances[p], same_class_sets(y), different_class_sets(y), gamma1[p], gamma2[p], lam[p]
        )
        assert value == values[p]
        np.testing.assert_array_equal(gradient, gradients[p])


def test_a_sample_cannot_be_similar_and_dissimilar():
    mask = np.array([[False, True], [True, False]])
    with pytest.raises(ValueError, match="both"):
        LanmlSets.from_masks(mask, mask)
