"""Projected gradient descent over the PSD cone for many problems on the same samples at once.

The algorithm is the one ``solver``'s docstring states (projected step, accept/reject with a per-problem step
size, the stopping rules, float64); this module implements it once, for a batch of problems, with its settings
(``SolverConfig``) and outcome (``SolverResult``), and ``solver.minimise_over_psd`` is its batch-of-one case. A
working set of up to ``batch_size`` problems is held as stacked arrays (metrics (B, d, d), distances (B, n, n));
each round evaluates one trial metric per problem with one call of the objective, problems that stop leave the
set and waiting problems take their places.
Every matrix of a stack goes through exactly the floating-point operations it would get alone (numpy's
stacked matmul and ``eigh`` work matrix by matrix, norms are BLAS dot products as in ``np.linalg.norm``), so
each problem's result does not depend on the batch it ran in (tested: batch sizes 1, 3 and 50 give the bits
of a plain one-problem loop, kept in the tests as their oracle).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

import numpy as np

from dml_core.linear.mahalanobis import distance_gradient_to_metric, pairwise_mahalanobis, project_psd
from dml_core.linear.solver_config import SolverConfig


@dataclass(frozen=True)
class SolverResult:
    metric: np.ndarray
    objective: float
    initial_objective: float
    evaluations: int
    stop_reason: str  # "tolerance", "step", "stationary" or "max_iterations"


# objective(distances (B, n, n), problem indices (B,)) -> (F (B,), dF/d distances (B, n, n))
BatchObjective = Callable[[np.ndarray, np.ndarray], tuple[np.ndarray, np.ndarray]]

# Distances held per working set: 2**18 float64 values = 2 MiB per (B, n, n) array, with about ten such
# temporaries per round. Larger sets gained nothing measurable (the work is element-wise; per-call overhead
# is already small next to it), and arrays of several MiB cost page faults on every allocation (glibc hands
# them back to the OS when freed).
DEFAULT_BATCH_ELEMENTS = 2**18


def default_batch_size(n_samples: int) -> int:
    """Problems per working set for ``n_samples`` samples (at least one).

    >>> default_batch_size(84), default_batch_size(2000)
    (37, 1)
    """
    return max(1, DEFAULT_BATCH_ELEMENTS // (n_samples * n_samples))


def _norms(matrices: np.ndarray) -> np.ndarray:
    """Frobenius norm of each matrix, summed as ``np.linalg.norm`` sums it (a BLAS dot product)."""
    flat = matrices.reshape(len(matrices), matrices.shape[-2] * matrices.shape[-1])
    return np.sqrt(np.vecdot(flat, flat))


def minimise_many_over_psd(
    objective: BatchObjective,
    X: np.ndarray,
    initial_metrics: np.ndarray,
    config: SolverConfig | None = None,
    batch_size: int | None = None,
    compiled: bool = True,
) -> list[SolverResult]:
    """Minimise problem p's ``objective(pairwise_mahalanobis(X, M), p)`` over PSD M from ``initial_metrics[p]``,
    for every p; results in problem order. ``compiled``: ``pairwise_mahalanobis``'s (same results either way)."""
    config = config or SolverConfig()
    batch_size = batch_size or default_batch_size(X.shape[0])
    n_problems, d = len(initial_metrics), X.shape[1]
    results: list[SolverResult | None] = [None] * n_problems
    # The working set: problem ids and their solver state.
    ids = np.empty(0, dtype=np.int64)
    metric, gradient = np.empty((0, d, d)), np.empty((0, d, d))
    value, initial_value, step = np.empty(0), np.empty(0), np.empty(0)
    evaluations = np.empty(0, dtype=np.int64)
    waiting = 0
    while waiting < n_problems or len(ids):
        new_ids = np.arange(waiting, min(n_problems, waiting + batch_size - len(ids)))
        waiting += len(new_ids)
        # Trials: one projected step per working problem, the projected start for each new one.
        trials = [project_psd(metric - step[:, None, None] * gradient)] if len(ids) else []
        if len(new_ids):
            trials.append(project_psd(initial_metrics[new_ids]))
        trial = np.concatenate(trials)
        trial_value, trial_distance_gradient = objective(
            pairwise_mahalanobis(X, trial, compiled), np.concatenate([ids, new_ids])
        )
        old = len(ids)

        # Working problems: keep a step that lowers F (and grow eta), else undo it (and shrink eta).
        evaluations = evaluations + 1
        accepted = trial_value[:old] < value
        improvement = value - trial_value[:old]
        tolerance_stop = accepted & (improvement <= config.tolerance * np.abs(value))
        metric[accepted], value[accepted] = trial[:old][accepted], trial_value[:old][accepted]
        if np.any(accepted):
            gradient[accepted] = distance_gradient_to_metric(X, trial_distance_gradient[:old][accepted])
        step = np.where(accepted, step * config.grow, step * config.shrink)

        # New problems: their first evaluation, and the first eta.
        new_metric, new_value = trial[old:], trial_value[old:]
        new_gradient = distance_gradient_to_metric(X, trial_distance_gradient[old:])
        new_step = config.initial_step * _norms(new_metric) / np.maximum(_norms(new_gradient), 1e-300)
        ids = np.concatenate([ids, new_ids])
        metric, gradient = np.concatenate([metric, new_metric]), np.concatenate([gradient, new_gradient])
        value, initial_value = np.concatenate([value, new_value]), np.concatenate([initial_value, new_value])
        step = np.concatenate([step, new_step])
        evaluations = np.concatenate([evaluations, np.ones(len(new_ids), dtype=np.int64)])
        tolerance_stop = np.concatenate([tolerance_stop, np.zeros(len(new_ids), dtype=bool)])

        # Stops, in this order: the tolerance right after a kept step, then (before the next trial) the
        # evaluation budget, a zero gradient, a collapsed step.
        gradient_norm = _norms(gradient)
        reason = np.select(
            [
                tolerance_stop,
                evaluations >= config.max_iterations,
                gradient_norm == 0.0,
                step * gradient_norm <= 1e-12 * np.maximum(_norms(metric), 1e-300),
            ],
            ["tolerance", "max_iterations", "stationary", "step"],
            default="",
        )
        stopped = reason != ""
        for index in np.flatnonzero(stopped):
            results[ids[index]] = SolverResult(
                metric[index].copy(),
                float(value[index]),
                float(initial_value[index]),
                int(evaluations[index]),
                str(reason[index]),
            )
        keep = ~stopped
        ids, metric, gradient = ids[keep], metric[keep], gradient[keep]
        value, initial_value, step, evaluations = value[keep], initial_value[keep], step[keep], evaluations[keep]
    return results  # type: ignore[return-value]
