"""The linear methods of anml Table 2 (section 7.1.2); their hyper-parameter grids are in ``grids``.

``METHODS`` maps a name to a fit function ``fit(X, y, seed=..., **hyper_parameters) -> LinearFit``. The learned
map is ``x -> L x`` with ``L^T L = M``, so kNN in the learned metric is Euclidean kNN on ``X @ L.T``. LMNN has no
baseline here: no maintained library runs with the pinned scikit-learn (reproduce/anml/table2_linear.md).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field

import numpy as np
from sklearn.neighbors import NeighborhoodComponentsAnalysis

from dml_core.linear.batched_solver import minimise_many_over_psd
from dml_core.linear.lanml import DEFAULT_MARGIN, LanmlSets, lanml_objectives
from dml_core.linear.mahalanobis import metric_to_transform
from dml_core.linear.neighbour_sets import different_class_sets, nearest_same_class_sets, same_class_sets
from dml_core.linear.pnca import pnca_objective
from dml_core.linear.solver import SolverResult, minimise_over_psd
from dml_core.linear.solver_config import SolverConfig
from dml_core.registry import Registry

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


def as_fit(result: SolverResult) -> LinearFit:
    """A solver's result as a fit: the map L with L^T L = M, and the solver's diagnostics."""
    return LinearFit(
        metric_to_transform(result.metric),
        {
            "objective": result.objective,
            "initial_objective": result.initial_objective,
            "evaluations": result.evaluations,
            "stop_reason": result.stop_reason,
        },
    )


def _solve(objective, X: np.ndarray, solver: SolverConfig) -> LinearFit:
    return as_fit(minimise_over_psd(objective, X, paper_initial_metric(*X.shape), solver))


def _lanml_sets(method: str, X: np.ndarray, y: np.ndarray, n_similar: int) -> LanmlSets:
    """S_i and D_i of LANML+ (every same-class sample) or LANML- (the ``n_similar`` nearest ones)."""
    similar = same_class_sets(y) if method == "lanml_plus" else nearest_same_class_sets(X, y, n_similar)
    return LanmlSets.from_masks(similar, different_class_sets(y))


def _check_gammas(method: str, gamma1: float, gamma2: float) -> None:
    if method == "lanml_plus" and (gamma1 <= 0 or gamma2 <= 0):
        raise ValueError(f"LANML+ needs gamma1 > 0 and gamma2 > 0, got {gamma1}, {gamma2}")
    if method == "lanml_minus" and (gamma1 >= 0 or gamma2 <= 0):
        raise ValueError(f"LANML- needs gamma1 < 0 and gamma2 > 0, got {gamma1}, {gamma2}")


def _fit_lanml(method, X, y, lam, gamma1, gamma2, n_similar, margin, solver) -> LinearFit:
    _check_gammas(method, gamma1, gamma2)
    sets = _lanml_sets(method, X, y, n_similar)

    def objective(distances: np.ndarray) -> tuple[float, np.ndarray]:
        value, gradient = lanml_objectives(distances, sets, gamma1, gamma2, lam, margin)
        return float(value), gradient

    return _solve(objective, X, solver)


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
    return _fit_lanml("lanml_plus", X, y, lam, gamma1, gamma2, LANML_MINUS_SIMILAR, margin, solver)


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
    """LANML-: Eq. (19) with gamma1 < 0, S_i = the ``n_similar`` Euclidean nearest same-class samples (convex).

    The paper gives M0 only for the non-convex methods; the same M0 = I / sqrt(N) is used here.
    """
    return _fit_lanml("lanml_minus", X, y, lam, gamma1, gamma2, n_similar, margin, solver)


def fit_lanml_many(
    method: str,
    X: np.ndarray,
    y: np.ndarray,
    points: Sequence[Mapping[str, float]],
    *,
    solver: SolverConfig = DEFAULT_SOLVER,
    batch_size: int | None = None,
    compiled: bool = True,
) -> list[LinearFit]:
    """``METHODS[method](X, y, **point)`` for every grid point at once (``batched_solver``): the same fits.

    ``method`` is ``lanml_plus`` or ``lanml_minus``; the sets S_i, D_i are built once for all points.
    ``compiled=False``: every step in numpy (the same fits, slower; the benchmark's reference).
    """
    for point in points:
        _check_gammas(method, point["gamma1"], point["gamma2"])
    sets = _lanml_sets(method, X, y, LANML_MINUS_SIMILAR)
    gamma1, gamma2, lam = (
        np.array([point[name] for point in points], dtype=np.float64) for name in ("gamma1", "gamma2", "lam")
    )

    def objectives(distances: np.ndarray, problems: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        return lanml_objectives(
            distances, sets, gamma1[problems], gamma2[problems], lam[problems], DEFAULT_MARGIN, compiled
        )

    initial = np.broadcast_to(paper_initial_metric(*X.shape), (len(points), X.shape[1], X.shape[1]))
    results = minimise_many_over_psd(objectives, X, initial, solver, batch_size, compiled)
    return [as_fit(result) for result in results]


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
# fit_many(method, X, y, grid points, solver=..., batch_size=...) -> one LinearFit per point, the same fits
# METHODS[method] gives one point at a time.
ManyFitFunction = Callable[..., list[LinearFit]]

_FITS: dict[str, FitFunction] = {
    "euclidean": fit_euclidean,
    "nca": fit_nca,
    "lanml_plus": fit_lanml_plus,
    "lanml_minus": fit_lanml_minus,
    "pnca": fit_pnca,
}
METHODS: Registry[FitFunction] = Registry("linear method", "method", _FITS)

# Methods whose grid search fits every grid point of a fold at once (batched solver).
MANY_FITS: dict[str, ManyFitFunction] = {"lanml_plus": fit_lanml_many, "lanml_minus": fit_lanml_many}

# How Table 2 prints each method.
DISPLAY_NAMES: dict[str, str] = {
    "euclidean": "Euclidean",
    "nca": "NCA",
    "lanml_plus": "LANML+",
    "lanml_minus": "LANML-",
    "pnca": "PNCA",
}


def transform_with(fit: LinearFit, X: np.ndarray) -> np.ndarray:
    """Map samples into the learned space, where the Euclidean distance is d_M."""
    return X @ fit.transform.T
