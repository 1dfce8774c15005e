"""Projected gradient descent over the PSD cone, deterministic on the CPU (numpy, float64).

The paper names neither solver, step size nor stopping rule. This one: step M <- P(M - eta * dF/dM),
with P the projection onto the PSD cone (eigenvalue clipping); a step is kept only if it lowers F, and then
eta grows by ``grow``, otherwise it is undone and eta shrinks by ``shrink``. The first eta moves M by
``initial_step`` times its Frobenius norm. The run stops after ``max_iterations`` objective
evaluations, when a kept step lowers F by less than ``tolerance`` relative to F, or when eta has shrunk
so far that a step no longer changes M.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

import numpy as np

# objective(distances) -> (F, dF/d distances)
DistanceObjective = Callable[[np.ndarray], tuple[float, np.ndarray]]


@dataclass(frozen=True)
class SolverConfig:
    max_iterations: int = 300
    tolerance: float = 1e-6
    initial_step: float = 0.1
    grow: float = 1.1
    shrink: float = 0.5


@dataclass(frozen=True)
class SolverResult:
    metric: np.ndarray
    objective: float
    initial_objective: float
    evaluations: int
    stop_reason: str  # "tolerance", "step", "stationary" or "max_iterations"


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
    from dml_core.linear.batched_solver import minimise_many_over_psd  # it imports this module's types

    def one_problem(distances: np.ndarray, problems: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        value, gradient = objective(distances[0])
        return np.array([value], dtype=np.float64), gradient[None]

    return minimise_many_over_psd(one_problem, X, initial_metric[None], config, batch_size=1)[0]
