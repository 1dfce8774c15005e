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

from dml_core.linear.mahalanobis import distance_gradient_to_metric, pairwise_mahalanobis, project_psd

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
    """Minimise ``objective(pairwise_mahalanobis(X, M))`` over PSD matrices M, from ``initial_metric``."""
    config = config or SolverConfig()
    metric = project_psd(initial_metric)
    value, distance_gradient = objective(pairwise_mahalanobis(X, metric))
    initial_value = value
    gradient = distance_gradient_to_metric(X, distance_gradient)
    step = config.initial_step * np.linalg.norm(metric) / max(np.linalg.norm(gradient), 1e-300)
    evaluations, stop_reason = 1, "max_iterations"
    while evaluations < config.max_iterations:
        gradient_norm = np.linalg.norm(gradient)
        if gradient_norm == 0.0:
            stop_reason = "stationary"
            break
        if step * gradient_norm <= 1e-12 * max(np.linalg.norm(metric), 1e-300):
            stop_reason = "step"
            break
        candidate = project_psd(metric - step * gradient)
        candidate_value, candidate_distance_gradient = objective(pairwise_mahalanobis(X, candidate))
        evaluations += 1
        if candidate_value < value:
            improvement = value - candidate_value
            previous = value
            metric, value = candidate, candidate_value
            gradient = distance_gradient_to_metric(X, candidate_distance_gradient)
            step *= config.grow
            if improvement <= config.tolerance * abs(previous):
                stop_reason = "tolerance"
                break
        else:
            step *= config.shrink
    return SolverResult(metric, float(value), float(initial_value), evaluations, stop_reason)
