"""The linear methods of anml Table 2 and their hyper-parameter grids (section 7.1.2).

``METHODS`` maps a name to a fit function ``fit(X, y, seed=..., **hyper_parameters) -> LinearFit``;
``PAPER_GRIDS`` maps the same name to the paper's grid of each hyper-parameter (empty: nothing tuned).
The learned map is ``x -> L x`` with ``L^T L = M``, so kNN in the learned metric is Euclidean kNN on
``X @ L.T``.

- ``lanml_plus``: Eq. (19) with gamma1 > 0; S_i = all same-class samples (non-convex; M0 = I / sqrt(N)).
- ``lanml_minus``: Eq. (19) with gamma1 < 0; S_i = the 10 Euclidean nearest same-class samples (convex).
  The paper gives M0 only for the non-convex methods; the same M0 = I / sqrt(N) is used here.
- ``pnca``: Eq. (21); S_i, D_i as for LANML+; M0 = I / sqrt(N).
- ``nca``: scikit-learn's ``NeighborhoodComponentsAnalysis`` with its defaults ("defaults", as the paper
  runs its baselines), seeded.
- ``euclidean``: the identity (plain kNN), the reference every learned metric should beat.
LMNN has no baseline here: the maintained-looking PyPI packages (metric-learn 0.7.0, pylmnn 1.6.4) do not
run with the pinned scikit-learn 1.9 or are unmaintained since 2020.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field

import numpy as np
from sklearn.neighbors import NeighborhoodComponentsAnalysis

from dml_core.linear.lanml import DEFAULT_MARGIN, lanml_objective
from dml_core.linear.mahalanobis import metric_to_transform
from dml_core.linear.neighbour_sets import different_class_sets, nearest_same_class_sets, same_class_sets
from dml_core.linear.pnca import pnca_objective
from dml_core.linear.solver import SolverConfig, minimise_over_psd

DEFAULT_SOLVER = SolverConfig()

# LANML-: size of S_i (section 7.1.2).
LANML_MINUS_SIMILAR = 10


@dataclass(frozen=True)
class LinearFit:
    transform: np.ndarray  # L, (d_out, d): the learned map x -> L x
    diagnostics: dict = field(default_factory=dict)  # solver stop reason, objective values, ...


def paper_initial_metric(n_samples: int, n_features: int) -> np.ndarray:
    """M0 = I / sqrt(N) (section 7.1.2), N the number of training samples."""
    return np.eye(n_features) / np.sqrt(n_samples)


def _solve(objective, X: np.ndarray, solver: SolverConfig) -> LinearFit:
    result = minimise_over_psd(objective, X, paper_initial_metric(*X.shape), solver)
    return LinearFit(
        metric_to_transform(result.metric),
        {
            "objective": result.objective,
            "initial_objective": result.initial_objective,
            "evaluations": result.evaluations,
            "stop_reason": result.stop_reason,
        },
    )


def fit_lanml_plus(
    X: np.ndarray,
    y: np.ndarray,
    *,
    lam: float,
    gamma1: float,
    gamma2: float,
    margin: float = DEFAULT_MARGIN,
    solver: SolverConfig = DEFAULT_SOLVER,
    seed: int = 0,
) -> LinearFit:
    """LANML+: Eq. (19) with gamma1 > 0, S_i = every other sample of the class (``seed``: unused)."""
    if gamma1 <= 0 or gamma2 <= 0:
        raise ValueError(f"LANML+ needs gamma1 > 0 and gamma2 > 0, got {gamma1}, {gamma2}")
    similar, dissimilar = same_class_sets(y), different_class_sets(y)
    return _solve(lambda D: lanml_objective(D, similar, dissimilar, gamma1, gamma2, lam, margin), X, solver)


def fit_lanml_minus(
    X: np.ndarray,
    y: np.ndarray,
    *,
    lam: float,
    gamma1: float,
    gamma2: float,
    n_similar: int = LANML_MINUS_SIMILAR,
    margin: float = DEFAULT_MARGIN,
    solver: SolverConfig = DEFAULT_SOLVER,
    seed: int = 0,
) -> LinearFit:
    """LANML-: Eq. (19) with gamma1 < 0, S_i = the ``n_similar`` Euclidean nearest same-class samples."""
    if gamma1 >= 0 or gamma2 <= 0:
        raise ValueError(f"LANML- needs gamma1 < 0 and gamma2 > 0, got {gamma1}, {gamma2}")
    similar, dissimilar = nearest_same_class_sets(X, y, n_similar), different_class_sets(y)
    return _solve(lambda D: lanml_objective(D, similar, dissimilar, gamma1, gamma2, lam, margin), X, solver)


def fit_pnca(
    X: np.ndarray, y: np.ndarray, *, alpha: float, solver: SolverConfig = DEFAULT_SOLVER, seed: int = 0
) -> LinearFit:
    """PNCA, Eq. (21): maximise sum_i p_i(alpha) over M >= 0."""
    similar, dissimilar = same_class_sets(y), different_class_sets(y)
    return _solve(lambda D: pnca_objective(D, similar, dissimilar, alpha), X, solver)


def fit_nca(X: np.ndarray, y: np.ndarray, *, seed: int = 0) -> LinearFit:
    """scikit-learn's NCA with default settings, ``random_state=seed``."""
    nca = NeighborhoodComponentsAnalysis(random_state=seed).fit(X, y)
    return LinearFit(np.asarray(nca.components_), {"iterations": int(nca.n_iter_)})


def fit_euclidean(X: np.ndarray, y: np.ndarray, *, seed: int = 0) -> LinearFit:
    """The identity map: kNN under the Euclidean metric of the standardised features."""
    return LinearFit(np.eye(X.shape[1]))


FitFunction = Callable[..., LinearFit]

METHODS: dict[str, FitFunction] = {
    "euclidean": fit_euclidean,
    "nca": fit_nca,
    "lanml_plus": fit_lanml_plus,
    "lanml_minus": fit_lanml_minus,
    "pnca": fit_pnca,
}

# How Table 2 prints each method.
DISPLAY_NAMES: dict[str, str] = {
    "euclidean": "Euclidean",
    "nca": "NCA",
    "lanml_plus": "LANML+",
    "lanml_minus": "LANML-",
    "pnca": "PNCA",
}


def _powers_of_two(first: float, last: float, step: float) -> tuple[float, ...]:
    """(2**first, 2**(first+step), ..., 2**last).

    >>> _powers_of_two(-1, 1, 1)
    (0.5, 1.0, 2.0)
    """
    count = round((last - first) / step) + 1
    return tuple(float(2.0 ** (first + i * step)) for i in range(count))


_LAMBDAS = tuple(round(0.1 + 0.2 * i, 10) for i in range(8))  # {0.1, 0.3, ..., 1.5}
_GAMMAS = _powers_of_two(-5, 5, 0.5)  # {2^-5, 2^-4.5, ..., 2^5}

# Section 7.1.2. Tuned jointly (one Cartesian product) by 5-fold cross-validation.
PAPER_GRIDS: dict[str, dict[str, tuple[float, ...]]] = {
    "euclidean": {},
    "nca": {},
    "lanml_plus": {"lam": _LAMBDAS, "gamma1": _GAMMAS, "gamma2": _GAMMAS},
    "lanml_minus": {"lam": _LAMBDAS, "gamma1": tuple(-g for g in _GAMMAS), "gamma2": _GAMMAS},
    "pnca": {"alpha": _powers_of_two(-8, 10, 1)},
}


def transform_with(fit: LinearFit, X: np.ndarray) -> np.ndarray:
    """Map samples into the learned space, where the Euclidean distance is d_M."""
    return X @ fit.transform.T
