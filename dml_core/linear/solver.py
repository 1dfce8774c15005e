"""Projected gradient descent over the PSD cone, deterministic on the CPU (numpy, float64).

The paper names neither solver, step size nor stopping rule. This one: step M <- P(M - eta * dF/dM),
with P the projection onto the PSD cone (eigenvalue clipping); a step is kept only if it lowers F, and then
eta grows by ``grow``, otherwise it is undone and eta shrinks by ``shrink``. The first eta moves M by
``initial_step`` times its Frobenius norm. The run stops after ``max_iterations`` objective
evaluations, when a kept step lowers F by less than ``tolerance`` relative to F, or when eta has shrunk
so far that a step no longer changes M. The settings are a ``SolverConfig``, the outcome a ``SolverResult``
(defined in ``solver_config`` and in ``batched_solver``, which implements the algorithm for many problems at once).
"""

from __future__ import annotations

from collections.abc import Callable

import numpy as np

from dml_core.linear.batched_solver import SolverResult, minimise_many_over_psd
from dml_core.linear.solver_config import SolverConfig

# objective(distances) -> (F, dF/d distances)
DistanceObjective = Callable[[np.ndarray], tuple[float, np.ndarray]]


def minimise_over_psd(
    objective: DistanceObjective,
    X: np.ndarray,
    initial_metric: np.ndarray,
    config: SolverConfig | None = None,
) -> SolverResult:
    """Minimise ``objective(pairwise_mahalanobis(X, M))`` over PSD matrices M, from ``initial_metric``.

    One problem is the batch-of-one case of ``batched_solver.minimise_many_over_psd``, which implements the
    algorithm above once for both (each problem's result does not depend on its batch: tested).
    """

    def one_problem(distances: np.ndarray, problems: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        value, gradient = objective(distances[0])
        return np.array([value], dtype=np.float64), gradient[None]

    return minimise_many_over_psd(one_problem, X, initial_metric[None], config, batch_size=1)[0]
