import math

import numpy as np
import pytest

from dml_core.linear.mahalanobis import distance_gradient_to_metric, pairwise_mahalanobis
from dml_core.linear.neighbour_sets import different_class_sets, same_class_sets
from dml_core.linear.pnca import pnca_objective, pnca_probabilities
from tests.linear.reference_objectives import reference_pnca_objective


def _nca_probability(D, y, i):
    """NCA's p_i (Goldberger et al.): softmax over k != i of -d_ik, summed over the same class."""
    others = [k for k in range(len(y)) if k != i]
    total = sum(math.exp(-D[i, k]) for k in others)
    return sum(math.exp(-D[i, k]) for k in others if y[k] == y[i]) / total


def test_alpha_one_is_nca_proposition_4():
    rng = np.random.default_rng(0)
    X, y = rng.normal(size=(9, 2)), np.array([0, 0, 0, 1, 1, 1, 2, 2, 2])
    D = pairwise_mahalanobis(X, np.eye(2))
    probabilities, rows = pnca_probabilities(D, same_class_sets(y), different_class_sets(y), 1.0)
    assert rows.all()
    np.testing.assert_allclose(probabilities, [_nca_probability(D, y, i) for i in range(9)], rtol=1e-12)


def test_hand_computed_value():
    # Query 0 at 0 with a similar sample at distance 1 and 4, a dissimilar one at distance 2; alpha = 2:
    # P = (e^-2 + e^-8)^(1/2), Q = e^-2, p = P / (P + Q).
    D = np.array([[0.0, 1.0, 4.0, 2.0]])
    similar = np.array([[False, True, True, False]])
    dissimilar = np.array([[False, False, False, True]])
    P = math.sqrt(math.exp(-2) + math.exp(-8))
    value, _ = pnca_objective(D, similar, dissimilar, 2.0)
    assert value == pytest.approx(-P / (P + math.exp(-2)), rel=1e-12)


def test_large_alpha_keeps_only_the_nearest_similar_sample():
    D = np.array([[0.0, 1.0, 4.0, 2.0]])
    similar = np.array([[False, True, True, False]])
    dissimilar = np.array([[False, False, False, True]])
    probabilities, _ = pnca_probabilities(D, similar, dissimilar, 1e4)
    assert probabilities[0] == pytest.approx(math.exp(-1) / (math.exp(-1) + math.exp(-2)), rel=1e-3)
    with pytest.raises(ValueError, match="alpha"):
        pnca_probabilities(D, similar, dissimilar, 0.0)


@pytest.mark.parametrize("alpha", [0.25, 1.0, 3.0])
def test_gradient_matches_finite_differences(alpha):
    rng = np.random.default_rng(1)
    X, y = rng.normal(size=(10, 3)), np.repeat([0, 1], 5)
    S, Dis = same_class_sets(y), different_class_sets(y)
    M = np.eye(3) * 0.5
    _value, G = pnca_objective(pairwise_mahalanobis(X, M), S, Dis, alpha)
    gradient = distance_gradient_to_metric(X, G)
    step = 1e-6
    for _ in range(5):
        E = rng.normal(size=(3, 3))
        E = E + E.T
        up = pnca_objective(pairwise_mahalanobis(X, M + step * E), S, Dis, alpha)[0]
        down = pnca_objective(pairwise_mahalanobis(X, M - step * E), S, Dis, alpha)[0]
        assert np.sum(gradient * E) == pytest.approx((up - down) / (2 * step), rel=1e-5, abs=1e-8)


@pytest.mark.parametrize("compiled", [True, False])
def test_the_objective_gives_the_bits_of_its_reference_formulation(compiled):
    # Shared exponentials and the compiled pass change no bit of value or gradient, whatever alpha (the grid's ends
    # included) and whatever the class sizes (a class of one sample has no S_i).
    rng = np.random.default_rng(4)
    y = np.repeat(np.arange(5), [1, 3, 8, 13, 20])
    X = rng.normal(size=(len(y), 4)) * rng.uniform(0.1, 5.0, 4)
    A = rng.normal(size=(4, 4))
    D = pairwise_mahalanobis(X, A @ A.T)
    S, Dis = same_class_sets(y), different_class_sets(y)
    for alpha in (2.0**-8, 0.25, 1.0, 16.0, 2.0**10):
        value, gradient = pnca_objective(D, S, Dis, alpha, compiled=compiled)
        reference_value, reference_gradient = reference_pnca_objective(D, S, Dis, alpha)
        assert value == reference_value
        np.testing.assert_array_equal(gradient, reference_gradient)
