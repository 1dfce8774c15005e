"""The log-exp mean of anml Eq. (12): a soft threshold between the minimum and the maximum.

    b(gamma) = -(1/gamma) * log( (1/n) * sum_i exp(-gamma * a_i) )

gamma -> +inf gives min(a), gamma -> -inf gives max(a), gamma -> 0 gives mean(a) (Lemma 1), and b is
decreasing in gamma (Lemma 2, read with the inequality the word "decreasing" implies).
Its gradient with respect to ``a`` is a softmax of ``-gamma * a``: non-negative weights that sum to one,
for either sign of gamma. Value and gradient come from one pass (plain numpy: scipy's ``logsumexp``
costs more than the arithmetic on the small matrices of the UCI sets).
"""

from __future__ import annotations

import numpy as np

# Below this |gamma| the closed form loses precision; the gamma -> 0 limit (the mean) is used instead.
GAMMA_ZERO = 1e-12


def log_exp_mean_with_weights(
    values: np.ndarray, gamma: float, mask: np.ndarray | None = None
) -> tuple[np.ndarray, np.ndarray]:
    """b(gamma) over the last axis, inside ``mask``, and its gradient d b / d values (zero outside the mask).

    >>> value, weights = log_exp_mean_with_weights(np.array([1.0, 3.0]), 0.0)
    >>> float(value), weights.tolist()
    (2.0, [0.5, 0.5])
    """
    values = np.asarray(values, dtype=np.float64)
    if mask is None:
        mask = np.ones(values.shape, dtype=bool)
    count = mask.sum(axis=-1)
    if np.any(count == 0):
        raise ValueError("log_exp_mean: every row needs at least one value inside the mask")
    if abs(gamma) < GAMMA_ZERO:
        weights = mask / count[..., None]
        return np.sum(weights * values, axis=-1), weights
    exponent = np.where(mask, -gamma * values, -np.inf)
    shift = exponent.max(axis=-1, keepdims=True)
    exponentials = np.exp(exponent - shift)  # exp(-inf) = 0 outside the mask
    total = exponentials.sum(axis=-1)
    log_sum = np.log(total) + shift[..., 0]
    return -(log_sum - np.log(count)) / gamma, exponentials / total[..., None]


def log_exp_mean(values: np.ndarray, gamma: float, mask: np.ndarray | None = None) -> np.ndarray:
    """b(gamma) of ``values`` over the last axis, over the entries where ``mask`` is True.

    >>> float(log_exp_mean(np.array([1.0, 2.0, 3.0]), 0.0))
    2.0
    >>> round(float(log_exp_mean(np.array([1.0, 2.0, 3.0]), 50.0)), 6)
    1.021972
    >>> round(float(log_exp_mean(np.array([1.0, 2.0, 3.0]), -50.0)), 6)
    2.978028
    """
    return log_exp_mean_with_weights(values, gamma, mask)[0]


def log_sum_exp(exponent: np.ndarray, mask: np.ndarray) -> np.ndarray:
    """log(sum(exp(exponent))) over the last axis, inside ``mask`` (every row needs one entry).

    >>> round(float(log_sum_exp(np.log(np.array([1.0, 2.0, 5.0])), np.array([True, True, False]))), 12)
    1.098612288668
    """
    masked = np.where(mask, exponent, -np.inf)
    shift = masked.max(axis=-1, keepdims=True)
    return np.log(np.exp(masked - shift).sum(axis=-1)) + shift[..., 0]
