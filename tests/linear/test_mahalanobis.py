import numpy as np
import pytest

from dml_core.linear.mahalanobis import (
    distance_gradient_to_metric,
    metric_to_transform,
    pairwise_mahalanobis,
    project_psd,
)


def _random_psd(rng, d):
    A = rng.normal(size=(d, d))
    return A @ A.T


def test_distances_match_the_definition():
    rng = np.random.default_rng(0)
    X, M = rng.normal(size=(6, 3)), _random_psd(rng, 3)
    D = pairwise_mahalanobis(X, M)
    for i in range(6):
        for j in range(6):
            difference = X[i] - X[j]
            assert D[i, j] == pytest.approx(difference @ M @ difference, abs=1e-12)
    np.testing.assert_allclose(pairwise_mahalanobis(X, np.eye(3)), ((X[:, None] - X[None]) ** 2).sum(-1), atol=1e-12)


def test_gradient_formula_matches_the_sum_of_outer_products():
    rng = np.random.default_rng(1)
    X, G = rng.normal(size=(5, 3)), rng.normal(size=(5, 5))
    expected = sum(G[i, j] * np.outer(X[i] - X[j], X[i] - X[j]) for i in range(5) for j in range(5))
    np.testing.assert_allclose(distance_gradient_to_metric(X, G), expected, atol=1e-12)


def test_projection_clips_negative_eigenvalues_and_keeps_psd_matrices():
    rng = np.random.default_rng(2)
    A = rng.normal(size=(4, 4))
    projected = project_psd(A)
    assert np.linalg.eigvalsh(projected).min() >= -1e-12
    np.testing.assert_allclose(project_psd(projected), projected, atol=1e-12)
    psd = _random_psd(rng, 4)
    np.testing.assert_allclose(project_psd(psd), psd, atol=1e-10)
    # Nearest in Frobenius norm: no other PSD matrix is closer to the symmetric part of A.
    symmetric = 0.5 * (A + A.T)
    best = np.linalg.norm(projected - symmetric)
    for _ in range(200):
        assert np.linalg.norm(_random_psd(rng, 4) * rng.uniform(0, 0.5) - symmetric) >= best - 1e-12


def test_transform_reproduces_the_metric():
    rng = np.random.default_rng(3)
    M = project_psd(rng.normal(size=(4, 4)))  # rank-deficient on purpose
    L = metric_to_transform(M)
    np.testing.assert_allclose(L.T @ L, M, atol=1e-12)
    X = rng.normal(size=(5, 4))
    Z = X @ L.T
    np.testing.assert_allclose(((Z[:, None] - Z[None]) ** 2).sum(-1), pairwise_mahalanobis(X, M), atol=1e-10)
