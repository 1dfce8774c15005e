"""The compiled passes give the numpy path's bits: the objective, its gradient and the distances, on stacks whose set
blocks have many shapes (classes of 1 to 23 samples, LANML+'s and LANML-'s sets, gammas of both signs and all the
grid's magnitudes)."""

import numpy as np
import pytest

from dml_core.linear.grids import PAPER_GRIDS
from dml_core.linear.lanml import LanmlSets, lanml_objectives
from dml_core.linear.log_exp_mean import masked_log_sum_exp
from dml_core.linear.mahalanobis import pairwise_mahalanobis
from dml_core.linear.methods import _lanml_sets
from dml_core.linear.neighbour_sets import different_class_sets, same_class_sets


def _problem(seed: int, n_features: int = 4):
    rng = np.random.default_rng(seed)
    sizes = [1, 2, 5, 11, 23, 7]
    y = np.repeat(np.arange(len(sizes)), sizes)
    X = rng.normal(size=(len(y), n_features)) * rng.uniform(0.1, 10.0, size=n_features)
    A = rng.normal(size=(9, n_features, n_features))
    metrics = A @ np.swapaxes(A, -1, -2) / n_features
    metrics[0] = 0.0  # every distance 0: ties everywhere
    return rng, X, y, metrics


def test_distances_equal_the_numpy_lines():
    _, X, _, metrics = _problem(0)
    np.testing.assert_array_equal(
        pairwise_mahalanobis(X, metrics, compiled=True), pairwise_mahalanobis(X, metrics, compiled=False)
    )


@pytest.mark.parametrize("method", ["lanml_plus", "lanml_minus"])
@pytest.mark.parametrize("seed", [1, 2])
def test_objective_and_gradient_equal_the_numpy_path(method, seed):
    rng, X, y, metrics = _problem(seed)
    distances = pairwise_mahalanobis(X, metrics)
    sets = _lanml_sets(method, X, y, 10)
    grid = PAPER_GRIDS[method]
    gamma1, gamma2, lam = (rng.choice(grid[name], size=len(metrics)) for name in ("gamma1", "gamma2", "lam"))
    compiled = lanml_objectives(distances, sets, gamma1, gamma2, lam, compiled=True)
    reference = lanml_objectives(distances, sets, gamma1, gamma2, lam, compiled=False)
    for fused, plain in zip(compiled, reference, strict=True):
        np.testing.assert_array_equal(fused, plain)
    assert np.any(compiled[1] != 0)


def test_a_gamma_near_zero_takes_the_numpy_path():
    rng, X, y, metrics = _problem(3)
    distances = pairwise_mahalanobis(X, metrics)
    sets = LanmlSets.from_masks(same_class_sets(y), different_class_sets(y))
    gamma1 = np.array([1e-13, *rng.uniform(0.1, 4.0, len(metrics) - 1)])
    gamma2, lam = rng.uniform(0.1, 4.0, len(metrics)), rng.uniform(0.1, 1.5, len(metrics))
    compiled = lanml_objectives(distances, sets, gamma1, gamma2, lam, compiled=True)
    reference = lanml_objectives(distances, sets, gamma1, gamma2, lam, compiled=False)
    for fused, plain in zip(compiled, reference, strict=True):
        np.testing.assert_array_equal(fused, plain)


def test_the_masked_exponents_equal_the_numpy_lines():
    _, X, y, metrics = _problem(5)
    distances = pairwise_mahalanobis(X, metrics)[1]
    for mask in (same_class_sets(y), different_class_sets(y)):
        rows = mask.any(axis=1)
        for scale in (2.0**-8, 1.0, 2.0**10):
            compiled = masked_log_sum_exp(distances[rows], scale, mask[rows], compiled=True)
            reference = masked_log_sum_exp(distances[rows], scale, mask[rows], compiled=False)
            for fused, plain in zip(compiled, reference, strict=True):
                np.testing.assert_array_equal(fused, plain)
