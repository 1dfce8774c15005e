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

from dml_core.linear.log_exp_mean import log_exp_mean_with_weights, log_sum_exp


def pnca_probabilities(
    distances: np.ndarray, similar: np.ndarray, dissimilar: np.ndarray, alpha: float
) -> tuple[np.ndarray, np.ndarray]:
    """p_i(alpha) for every query with a non-empty S_i and D_i, and the mask of those queries."""
    if alpha <= 0:
        raise ValueError(f"pnca: alpha must be > 0, got {alpha}")
    rows = similar.any(axis=1) & dissimilar.any(axis=1)
    D = distances[rows]
    log_p = log_sum_exp(-alpha * D, similar[rows]) / alpha
    log_q = log_sum_exp(-D, dissimilar[rows])
    return expit(log_p - log_q), rows


def pnca_objective(
    distances: np.ndarray, similar: np.ndarray, dissimilar: np.ndarray, alpha: float
) -> tuple[float, np.ndarray]:
    """F(M) = -sum_i p_i(alpha) and dF/dD for the (n, n) squared Mahalanobis ``distances``."""
    probabilities, rows = pnca_probabilities(distances, similar, dissimilar, alpha)
    D = distances[rows]
    slope = (probabilities * (1.0 - probabilities))[:, None]
    # d log P_i / d d_ij = -softmax_S(-alpha d)_j and d log Q_i / d d_il = -softmax_D(-d)_l (the
    # log-exp-mean weights), so dF/dd_ij = +slope * softmax_S and dF/dd_il = -slope * softmax_D.
    similar_weights = log_exp_mean_with_weights(D, alpha, similar[rows])[1]
    dissimilar_weights = log_exp_mean_with_weights(D, 1.0, dissimilar[rows])[1]
    gradient = np.zeros_like(distances)
    gradient[rows] = slope * (similar_weights - dissimilar_weights)
    return float(-probabilities.sum()), gradient
