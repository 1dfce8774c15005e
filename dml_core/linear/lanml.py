"""The LANML objective, anml Eq. (19), with the experimental choices of section 7.1.1.

    F(M) = sum_i hinge( ds_i(M) - dd_i(M) ) + lam * Omega(M)
    ds_i = b_{gamma1}( {d_M(x_i, x_j) : j in S_i} )      soft radius of the similar set   (Eq. 15)
    dd_i = b_{gamma2}( {d_M(x_i, x_l) : l in D_i} )      soft radius of the dissimilar set (Eq. 16)
    Omega(M) = (1/N) sum_i (1/|S_i|) sum_{j in S_i} d_M(x_i, x_j)
    hinge(x) = max(0, margin + x)

b is the log-exp mean (Eq. 12). gamma1 > 0 is LANML+, gamma1 < 0 is LANML- (convex for gamma2 > 0,
Lemma 3). The paper names the hinge loss but not its margin. With margin 0 the convex problem is solved
by M = 0 (every term vanishes), so a margin is needed to fix the scale of M; ``margin=1`` is our choice,
as in LMNN. The loss is summed and Omega averaged over queries, as Eq. (19) prints them.
Queries with an empty S_i (a class of one sample) have no constraint and are left out.
"""

from __future__ import annotations

import numpy as np

from dml_core.linear.log_exp_mean import log_exp_mean_with_weights

DEFAULT_MARGIN = 1.0


def lanml_objective(
    distances: np.ndarray,
    similar: np.ndarray,
    dissimilar: np.ndarray,
    gamma1: float,
    gamma2: float,
    lam: float,
    margin: float = DEFAULT_MARGIN,
) -> tuple[float, np.ndarray]:
    """F(M) and dF/dD for the (n, n) squared Mahalanobis ``distances`` and boolean set masks."""
    value, gradient = lanml_objectives(distances, similar, dissimilar, gamma1, gamma2, lam, margin)
    return float(value), gradient


def lanml_objectives(
    distances: np.ndarray,
    similar: np.ndarray,
    dissimilar: np.ndarray,
    gamma1: float | np.ndarray,
    gamma2: float | np.ndarray,
    lam: float | np.ndarray,
    margin: float = DEFAULT_MARGIN,
) -> tuple[np.ndarray, np.ndarray]:
    """F and dF/dD for a stack of problems on the same samples: ``distances`` (..., n, n), hyper-parameters
    that broadcast against ``distances.shape[:-2]`` (one value per problem), the (n, n) set masks shared.

    Each problem gets exactly the arithmetic it would get alone.
    """
    n = distances.shape[-1]
    gamma1, gamma2, lam = (np.asarray(h, dtype=np.float64) for h in (gamma1, gamma2, lam))
    rows = similar.any(axis=1) & dissimilar.any(axis=1)
    # Contiguous, so that every reduction over the last axis sums in the order a single problem's does.
    D, S, Dis = np.ascontiguousarray(distances[..., rows, :]), similar[rows], dissimilar[rows]
    similar_radius, similar_weights = log_exp_mean_with_weights(D, _per_row(gamma1), S)
    dissimilar_radius, dissimilar_weights = log_exp_mean_with_weights(D, _per_row(gamma2), Dis)
    hinge_argument = margin + similar_radius - dissimilar_radius
    active = hinge_argument > 0
    set_sizes = S.sum(axis=1)
    regulariser = np.sum(np.where(S, D, 0.0).sum(axis=-1) / set_sizes, axis=-1) / n
    value = np.sum(np.where(active, hinge_argument, 0.0), axis=-1) + lam * regulariser

    gradient_rows = (
        active[..., None] * (similar_weights - dissimilar_weights)
        + (_per_row(_per_row(lam)) / n) * S / set_sizes[:, None]
    )
    gradient = np.zeros_like(distances)
    gradient[..., rows, :] = gradient_rows
    return value, gradient


def _per_row(hyper_parameter: np.ndarray) -> np.ndarray:
    """A per-problem value, broadcastable over one more trailing axis (a number stays a number)."""
    return hyper_parameter[..., None] if hyper_parameter.ndim else hyper_parameter
