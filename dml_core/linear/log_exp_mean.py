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

from dml_core.linear.kernels import masked_shifted_exponents

# Below this |gamma| the closed form loses precision; the gamma -> 0 limit (the mean) is used instead.
GAMMA_ZERO = 1e-12

# exp(x) for x below this is smaller than 1e-304, i.e. 0 next to the row's largest term exp(0) = 1. numpy's
# SIMD exp falls back to a slow scalar path for every argument that underflows (or is -inf), as the rows of large
# gamma do; clamping the argument here keeps it on the fast path (how much it costs: docs/performance.md).
EXPONENT_FLOOR = -700.0


def log_exp_mean_with_weights(
    values: np.ndarray, gamma: float | np.ndarray, mask: np.ndarray | None = None
) -> tuple[np.ndarray, np.ndarray]:
    """b(gamma) over the last axis, inside ``mask``, and its gradient d b / d values (zero outside the mask).

    ``gamma`` is a number or an array that broadcasts against ``values.shape[:-1]`` (one gamma per row, or
    per problem of a stack): each row then gets exactly the arithmetic it would get alone.

    >>> value, weights = log_exp_mean_with_weights(np.array([1.0, 3.0]), 0.0)
    >>> float(value), weights.tolist()
    (2.0, [0.5, 0.5])
    >>> log_exp_mean_with_weights(np.array([[1.0, 3.0], [1.0, 3.0]]), np.array([0.0, 50.0]))[0].round(6).tolist()
    [2.0, 1.013863]
    """
    values = np.asarray(values, dtype=np.float64)
    # mask=None: every entry counts (the packed sets of ``lanml``), and no masking pass is spent.
    count = values.shape[-1] if mask is None else mask.sum(axis=-1)
    if np.any(count == 0):
        raise ValueError("log_exp_mean: every row needs at least one value inside the mask")
    near_zero = np.abs(gamma) < GAMMA_ZERO
    if np.all(near_zero):
        weights = (np.ones(values.shape, dtype=bool) if mask is None else mask) / np.asarray(count)[..., None]
        return np.sum(weights * values, axis=-1), weights
    if not np.ndim(gamma):
        return _closed_form(values, gamma, gamma, mask, count)
    # One gamma per row: rows whose gamma is ~0 take the limit (the mean), the others the closed form.
    gamma = np.where(near_zero, 1.0, gamma)
    value, weights = _closed_form(values, gamma[..., None], gamma, mask, count)
    if np.any(near_zero):
        mean_value, mean_weights = log_exp_mean_with_weights(values, 0.0, mask)
        value = np.where(near_zero, mean_value, value)
        weights = np.where(near_zero[..., None], mean_weights, weights)
    return value, weights


def _closed_form(values, gamma_by_entry, gamma_by_row, mask, count) -> tuple[np.ndarray, np.ndarray]:
    """b(gamma) and its weights by Eq. (12), shifted by the row maximum so that no exponential overflows.

    In-place steps on one fresh array: the same arithmetic as the plain expressions, fewer allocations.
    """
    exponent = -gamma_by_entry * values
    if mask is not None:
        exponent = np.where(mask, exponent, -np.inf)
    shift = exponent.max(axis=-1, keepdims=True)
    exponentials = np.subtract(exponent, shift, out=exponent)
    np.maximum(exponentials, EXPONENT_FLOOR, out=exponentials)
    np.exp(exponentials, out=exponentials)
    if mask is not None:
        np.multiply(exponentials, mask, out=exponentials)  # 0 outside the mask
    total = exponentials.sum(axis=-1)
    log_sum = np.log(total) + shift[..., 0]
    np.divide(exponentials, total[..., None], out=exponentials)
    return -(log_sum - np.log(count)) / gamma_by_row, exponentials


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


def masked_log_sum_exp(
    values: np.ndarray, scale: float, mask: np.ndarray, compiled: bool = True
) -> tuple[np.ndarray, np.ndarray]:
    """Over the last axis of a (rows, n) array, inside ``mask`` (every row needs one entry): log(sum(exp(-scale * v)))
    and its weights, the softmax of ``-scale * v`` (zero outside the mask), from one set of exponentials.

    ``compiled``: the pass before the ``exp`` in one compiled loop (``kernels.masked_shifted_exponents``), the same
    bits as the numpy lines.

    >>> log_sum, weights = masked_log_sum_exp(np.array([[0.0, np.log(2.0), 5.0]]), -1.0, np.array([[1, 1, 0]], bool))
    >>> round(float(log_sum[0]), 12), weights.round(6).tolist()
    (1.098612288668, [[0.333333, 0.666667, 0.0]])
    """
    if compiled:
        exponentials, shift = np.empty(values.shape), np.empty(values.shape[0])
        masked_shifted_exponents(values, scale, mask, EXPONENT_FLOOR, exponentials, shift)
    else:
        masked = np.where(mask, -scale * values, -np.inf)
        shift = masked.max(axis=-1)
        exponentials = np.maximum(np.subtract(masked, shift[:, None], out=masked), EXPONENT_FLOOR, out=masked)
    np.exp(exponentials, out=exponentials)
    np.multiply(exponentials, mask, out=exponentials)  # 0 outside the mask
    total = exponentials.sum(axis=-1)
    return np.log(total) + shift, np.divide(exponentials, total[:, None], out=exponentials)
