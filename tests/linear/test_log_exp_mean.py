import itertools
import math

import numpy as np
import pytest

from dml_core.linear.log_exp_mean import log_exp_mean, log_exp_mean_with_weights, masked_log_sum_exp


def test_hand_computed_value():
    # a = (0, ln 3), gamma = 1: b = -log((1 + 1/3) / 2) = log(3/2).
    assert log_exp_mean(np.array([0.0, math.log(3.0)]), 1.0) == pytest.approx(math.log(1.5), abs=1e-14)


def test_limits_of_lemma_1():
    a = np.array([0.3, 1.7, 2.0, 5.5])
    assert log_exp_mean(a, 0.0) == pytest.approx(a.mean(), abs=1e-15)
    assert log_exp_mean(a, 1e-9) == pytest.approx(a.mean(), abs=1e-7)
    assert log_exp_mean(a, 1e4) == pytest.approx(a.min(), abs=1e-3)
    assert log_exp_mean(a, -1e4) == pytest.approx(a.max(), abs=1e-3)


def test_decreasing_in_gamma_lemma_2():
    a = np.array([0.1, 0.4, 2.0, 3.0, 7.0])
    gammas = np.linspace(-5, 5, 41)
    values = [float(log_exp_mean(a, g)) for g in gammas]
    assert all(earlier > later for earlier, later in itertools.pairwise(values))


# K = 1 is the limit gamma -> +inf and K = n is gamma = 0: the theorem is about 1 < K < n.
@pytest.mark.parametrize("k", [2, 3, 5, 9])
def test_theorem_3_a_positive_gamma_gives_the_mean_of_the_k_smallest(k):
    a = np.sort(np.random.default_rng(k).uniform(0, 4, size=10))
    target_small, target_large = a[:k].mean(), a[-k:].mean()
    # b is continuous and decreasing from max (gamma -> -inf) to min (gamma -> +inf): bisect each sign.
    for target, low, high in ((target_small, 0.0, 1e3), (target_large, -1e3, 0.0)):
        for _ in range(200):
            middle = 0.5 * (low + high)
            low, high = (middle, high) if log_exp_mean(a, middle) > target else (low, middle)
        assert log_exp_mean(a, 0.5 * (low + high)) == pytest.approx(target, abs=1e-9)
        assert (0.5 * (low + high) > 0) == (target is target_small)


def test_mask_and_rows():
    values = np.array([[1.0, 2.0, 100.0], [4.0, 4.0, 4.0]])
    mask = np.array([[True, True, False], [True, False, True]])
    np.testing.assert_allclose(log_exp_mean(values, 0.0, mask), [1.5, 4.0])
    np.testing.assert_allclose(log_exp_mean(values, 3.0, mask)[1], 4.0)
    with pytest.raises(ValueError, match="at least one"):
        log_exp_mean(values, 1.0, np.zeros_like(mask))


@pytest.mark.parametrize("gamma", [-2.0, -0.03, 0.0, 0.5, 8.0])
def test_weights_are_the_gradient(gamma):
    rng = np.random.default_rng(0)
    a = rng.uniform(0, 3, size=7)
    mask = np.array([True, True, False, True, True, False, True])
    _, weights = log_exp_mean_with_weights(a, gamma, mask)
    assert weights.sum() == pytest.approx(1.0)
    assert np.all(weights >= 0) and np.all(weights[~mask] == 0)
    step = 1e-6
    for index in range(len(a)):
        shifted_up, shifted_down = a.copy(), a.copy()
        shifted_up[index] += step
        shifted_down[index] -= step
        numeric = (log_exp_mean(shifted_up, gamma, mask) - log_exp_mean(shifted_down, gamma, mask)) / (2 * step)
        assert weights[index] == pytest.approx(numeric, abs=1e-7)


def test_log_sum_exp_is_stable_for_large_exponents():
    values = np.array([[-1000.0, -1000.0, 1000.0]])  # exponents 1000, 1000, -1000
    for compiled in (True, False):
        log_sum, weights = masked_log_sum_exp(values, 1.0, np.ones((1, 3), bool), compiled)
        assert log_sum[0] == pytest.approx(1000.0 + math.log(2.0))
        np.testing.assert_allclose(weights, [[0.5, 0.5, 0.0]], atol=1e-300)
    # Very large |gamma| distances must not overflow either.
    assert np.isfinite(log_exp_mean(np.array([0.0, 500.0]), 32.0))
    assert np.isfinite(log_exp_mean(np.array([0.0, 500.0]), -32.0))
