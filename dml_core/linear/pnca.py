"""PNCA, the parameterised NCA of anml Eq. (21) (Proposition 4).

    p_i(alpha) = P_i / (P_i + Q_i),  P_i = ( sum_{j in S_i} exp(-alpha d_M(x_i, x_j)) )^(1/alpha),
                                     Q_i = sum_{l in D_i} exp(-d_M(x_i, x_l))

With alpha = 1, S_i = the other samples of class y_i and D_i = the samples of other classes, p_i is
NCA's probability that x_i is classified correctly. As in NCA, the sum of p_i is maximised (the paper
does not print the training objective; a log variant would be the other reading), so the minimised
objective is F(M) = -sum_i p_i. Everything is computed in log space:
log P_i = (1/alpha) logsumexp(-alpha d), log Q_i = logsumexp(-d), p_i = sigmoid(log P_i - log Q_i).
Queries with an empty S_i or D_i are left out.
"""

from __future__ import annotations

import numpy as np
from scipy.special import expit

from dml_core.linear.log_exp_mean import GAMMA_ZERO, log_exp_mean_with_weights, masked_log_sum_exp


def _log_terms(distances, similar, dissimilar, alpha, compiled):
    """For the queries with a non-empty S_i and D_i (``rows``): log P_i, log Q_i and their softmax weights over S_i
    and D_i, each from one set of exponentials."""
    if alpha <= 0:
        raise ValueError(f"pnca: alpha must be > 0, got {alpha}")
    rows = similar.any(axis=1) & dissimilar.any(axis=1)
    D = distances[rows]
    log_sum_similar, similar_weights = masked_log_sum_exp(D, alpha, similar[rows], compiled)
    log_q, dissimilar_weights = masked_log_sum_exp(D, 1.0, dissimilar[rows], compiled)
    if alpha < GAMMA_ZERO:  # the softmax's limit, the mean, as log_exp_mean takes it
        similar_weights = log_exp_mean_with_weights(D, alpha, similar[rows])[1]
    return rows, log_sum_similar / alpha, log_q, similar_weights, dissimilar_weights


def pnca_probabilities(
    distances: np.ndarray, similar: np.ndarray, dissimilar: np.ndarray, alpha: float
) -> tuple[np.ndarray, np.ndarray]:
    """p_i(alpha) for every query with a non-empty S_i and D_i, and the mask of those queries."""
    rows, log_p, log_q, _, _ = _log_terms(distances, similar, dissimilar, alpha, compiled=True)
    return expit(log_p - log_q), rows


def pnca_objective(
    distances: np.ndarray, similar: np.ndarray, dissimilar: np.ndarray, alpha: float, compiled: bool = True
) -> tuple[float, np.ndarray]:
    """F(M) = -sum_i p_i(alpha) and dF/dD for the (n, n) squared Mahalanobis ``distances`` (``compiled``: the
    masked exponents' compiled pass, the same bits)."""
    rows, log_p, log_q, similar_weights, dissimilar_weights = _log_terms(
        distances, similar, dissimilar, alpha, compiled
    )
    probabilities = expit(log_p - log_q)
    slope = (probabilities * (1.0 - probabilities))[:, None]
    # d log P_i / d d_ij = -softmax_S(-alpha d)_j and d log Q_i / d d_il = -softmax_D(-d)_l, so
    # dF/dd_ij = +slope * softmax_S and dF/dd_il = -slope * softmax_D.
    gradient = np.zeros_like(distances)
    gradient[rows] = slope * (similar_weights - dissimilar_weights)
    return float(-probabilities.sum()), gradient
