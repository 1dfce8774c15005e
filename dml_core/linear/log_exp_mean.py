"""The log-exp mean of anml Eq. (12): a soft threshold between the minimum and the maximum.

    b(gamma) = -(1/gamma) * log( (1/n) * sum_i exp(-gamma * a_i) )

gamma -> +inf gives min(a), gamma -> -inf gives max(a), gamma -> 0 gives mean(a) (Lemma 1), and b is
decreasing in gamma (Lemma 2, read with the inequality the word "decreasing" implies).
Its gradient with respect to ``a`` is a softmax of ``-gamma * a``: non-negative weights that sum to one,
for either sign of gamma.
"""

from __future__ import annotations

import numpy as np
from scipy.special import logsumexp, softmax

# Below this |gamma| the closed form loses precision; the gamma -> 0 limit (the mean) is used instead.
GAMMA_ZERO = 1e-12


def log_exp_mean(
    values: np.ndarray, gamma: float, mask: np.ndarray | None = None, axis: int = -1
) -> np.ndarray:
    """b(gamma) of ``values`` along ``axis``, over the entries where ``mask`` is True.

    >>> float(log_exp_mean(np.array([1.0, 2.0, 3.0]), 0.0))
    2.0
    >>> round(float(log_exp_mean(np.array([1.0, 2.0, 3.0]), 50.0)), 6)
    1.021972
    >>> round(float(log_exp_mean(np.array([1.0, 2.0, 3.0]), -50.0)), 6)
    2.978028
    """
    values = np.asarray(values, dtype=np.float64)
    if mask is None:
        mask = np.ones(values.shape, dtype=bool)
    count = mask.sum(axis=axis)
    if np.any(count == 0):
        raise ValueError("log_exp_mean: every row needs at least one value inside the mask")
    if abs(gamma) < GAMMA_ZERO:
        return np.where(mask, values, 0.0).sum(axis=axis) / count
    exponent = np.where(mask, -gamma * values, -np.inf)
    return -(logsumexp(exponent, axis=axis) - np.log(count)) / gamma


def log_exp_mean_weights(
    values: np.ndarray, gamma: float, mask: np.ndarray | None = None, axis: int = -1
) -> np.ndarray:
    """d b(gamma) / d values: softmax of ``-gamma * values`` inside the mask, zero outside.

    >>> log_exp_mean_weights(np.array([1.0, 2.0]), 0.0).tolist()
    [0.5, 0.5]
    """
    values = np.asarray(values, dtype=np.float64)
    if mask is None:
        mask = np.ones(values.shape, dtype=bool)
    exponent = np.where(mask, -gamma * values, -np.inf)
    return np.where(mask, softmax(exponent, axis=axis), 0.0)
