"""Squared Mahalanobis distances d_M(x, y) = (x - y)^T M (x - y) and the PSD cone they need.

Every objective of this package depends on M only through the matrix of pairwise distances D, so
its gradient is dF/dM = sum_ij G_ij (x_i - x_j)(x_i - x_j)^T with G = dF/dD: one formula,
``distance_gradient_to_metric``, serves LANML and PNCA alike.

Every function also takes a stack of metrics (or distance gradients) with leading batch axes, so that many
problems on the same samples ``X`` are solved at once (``batched_solver``); each matrix of a stack goes
through exactly the operations a single matrix does.
"""

from __future__ import annotations

import numpy as np

from dml_core.linear.kernels import finish_distances


def pairwise_mahalanobis(X: np.ndarray, M: np.ndarray, compiled: bool = True) -> np.ndarray:
    """(..., n, n) squared Mahalanobis distances between the rows of ``X`` for each metric of ``M`` (..., d, d);
    exact zeros on the diagonal. ``compiled``: a stack (B, d, d) takes one compiled pass after the product
    (``kernels.finish_distances``, the same bits as the numpy lines).

    >>> pairwise_mahalanobis(np.array([[0.0, 0.0], [1.0, 2.0]]), np.diag([1.0, 3.0])).tolist()
    [[0.0, 13.0], [13.0, 0.0]]
    """
    XM = X @ M
    norms = np.einsum("...ij,ij->...i", XM, X)
    # -2 x_i^T M x_j + |x_i|_M^2 + |x_j|_M^2, in place: no temporary of the size of the result.
    distances = XM @ X.T
    if compiled and distances.ndim == 3 and distances.flags.c_contiguous:
        finish_distances(distances, norms)
        return distances
    distances *= -2.0
    distances += norms[..., :, None]
    distances += norms[..., None, :]
    # Rounding can push a distance of a PSD metric slightly below zero.
    np.maximum(distances, 0.0, out=distances)
    diagonal = np.arange(X.shape[0])
    distances[..., diagonal, diagonal] = 0.0
    return distances


def distance_gradient_to_metric(X: np.ndarray, G: np.ndarray) -> np.ndarray:
    """dF/dM = sum_ij G_ij (x_i - x_j)(x_i - x_j)^T = X^T diag(G 1 + G^T 1) X - (X^T G X + (X^T G X)^T), for
    each (n, n) matrix of ``G`` (..., n, n). Only the product with G costs O(n^2 d); G is read, never copied.

    >>> X = np.array([[0.0], [2.0]])
    >>> distance_gradient_to_metric(X, np.array([[0.0, 1.0], [0.0, 0.0]])).tolist()
    [[4.0]]
    """
    degrees = G.sum(axis=-1) + G.sum(axis=-2)
    cross = X.T @ G @ X
    return (X.T * degrees[..., None, :]) @ X - (cross + np.swapaxes(cross, -1, -2))


def project_psd(M: np.ndarray) -> np.ndarray:
    """The nearest PSD matrix in Frobenius norm (of each matrix of a stack): symmetrise, then clip negative
    eigenvalues at zero.

    >>> project_psd(np.array([[1.0, 0.0], [0.0, -2.0]])).tolist()
    [[1.0, 0.0], [0.0, 0.0]]
    """
    symmetric = 0.5 * (M + np.swapaxes(M, -1, -2))
    eigenvalues, eigenvectors = np.linalg.eigh(symmetric)
    return (eigenvectors * np.clip(eigenvalues, 0.0, None)[..., None, :]) @ np.swapaxes(eigenvectors, -1, -2)


def metric_to_transform(M: np.ndarray) -> np.ndarray:
    """L with L^T L = M (for each matrix of a stack), so that d_M(x, y) = |L x - L y|^2 and kNN can run on
    ``X @ L.T``.

    >>> metric_to_transform(np.diag([4.0, 9.0])).round(12).tolist()
    [[2.0, 0.0], [0.0, 3.0]]
    """
    eigenvalues, eigenvectors = np.linalg.eigh(0.5 * (M + np.swapaxes(M, -1, -2)))
    return np.swapaxes(eigenvectors * np.sqrt(np.clip(eigenvalues, 0.0, None))[..., None, :], -1, -2)
