"""The PNCA objective as the package computed it before its exponentials were shared and compiled (two log-sum-exps
and two log-exp means over the same distances): the oracle that the package's objective and the solver benchmark's
reference are held to, bit for bit."""

from __future__ import annotations

import numpy as np
from scipy.special import expit

from dml_core.linear.log_exp_mean import EXPONENT_FLOOR, log_exp_mean_with_weights


def _log_sum_exp(exponent: np.ndarray, mask: np.ndarray) -> np.ndarray:
    masked = np.where(mask, exponent, -np.inf)
    shift = masked.max(axis=-1, keepdims=True)
    exponentials = np.exp(np.maximum(masked - shift, EXPONENT_FLOOR)) * mask
    return np.log(exponentials.sum(axis=-1)) + shift[..., 0]


def reference_pnca_objective(distances, similar, dissimilar, alpha):
    rows = similar.any(axis=1) & dissimilar.any(axis=1)
    D = distances[rows]
    log_p = _log_sum_exp(-alpha * D, similar[rows]) / alpha
    log_q = _log_sum_exp(-D, dissimilar[rows])
    probabilities = expit(log_p - log_q)
    slope = (probabilities * (1.0 - probabilities))[:, None]
    similar_weights = log_exp_mean_with_weights(D, alpha, similar[rows])[1]
    dissimilar_weights = log_exp_mean_with_weights(D, 1.0, dissimilar[rows])[1]
    gradient = np.zeros_like(distances)
    gradient[rows] = slope * (similar_weights - dissimilar_weights)
    return float(-probabilities.sum()), gradient
