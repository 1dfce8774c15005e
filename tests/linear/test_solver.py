import ast
import pathlib

import numpy as np
import pytest

from dml_core.linear import batched_solver, solver
from dml_core.linear.mahalanobis import pairwise_mahalanobis
from dml_core.linear.solver import minimise_over_psd
from dml_core.linear.solver_config import SolverConfig


def _least_squares_to(target):
    """F(D) = sum (D - target)^2: minimised by any metric that reproduces the target distances."""

    def objective(D):
        residual = D - target
        return float(np.sum(residual**2)), 2.0 * residual

    return objective


def test_recovers_a_known_metric():
    rng = np.random.default_rng(0)
    X = rng.normal(size=(15, 3))
    true_metric = np.array([[2.0, 0.5, 0.0], [0.5, 1.0, 0.0], [0.0, 0.0, 0.1]])
    result = minimise_over_psd(
        _least_squares_to(pairwise_mahalanobis(X, true_metric)),
        X,
        np.eye(3),
        SolverConfig(max_iterations=5000, tolerance=1e-14),
    )
    np.testing.assert_allclose(result.metric, true_metric, atol=1e-3)
    assert result.objective < 1e-6 * result.initial_objective


def test_stops_at_the_boundary_of_the_psd_cone():
    # Negative target distances: the constrained optimum is M = 0, on the boundary of the cone; an
    # unconstrained step would leave it.
    rng = np.random.default_rng(1)
    X = rng.normal(size=(10, 2))
    result = minimise_over_psd(
        _least_squares_to(-pairwise_mahalanobis(X, np.eye(2))),
        X,
        np.eye(2),
        SolverConfig(max_iterations=2000),
    )
    assert np.linalg.eigvalsh(result.metric).min() >= -1e-12
    np.testing.assert_allclose(result.metric, 0.0, atol=1e-4)


def test_deterministic_and_reports_why_it_stopped():
    rng = np.random.default_rng(2)
    X = rng.normal(size=(10, 2))
    objective = _least_squares_to(pairwise_mahalanobis(X, np.diag([3.0, 0.5])))
    first = minimise_over_psd(objective, X, np.eye(2), SolverConfig(max_iterations=7))
    second = minimise_over_psd(objective, X, np.eye(2), SolverConfig(max_iterations=7))
    np.testing.assert_array_equal(first.metric, second.metric)
    assert first.evaluations == 7 and first.stop_reason == "max_iterations"
    converged = minimise_over_psd(objective, X, np.eye(2), SolverConfig(max_iterations=10_000))
    assert converged.stop_reason in ("tolerance", "step", "stationary")
    assert converged.objective == pytest.approx(0.0, abs=1e-6)


def test_the_one_problem_solver_stands_on_the_batched_one_without_an_import_loop():
    # solver imports batched_solver (and its settings and result types) at the top; nothing imports the other way
    # and no import hides inside a function.
    for module, other in ((solver, "dml_core.linear.batched_solver"), (batched_solver, "dml_core.linear.solver")):
        tree = ast.parse(pathlib.Path(module.__file__).read_text())
        at_top = {node.module for node in tree.body if isinstance(node, ast.ImportFrom)}
        inside = [n for n in ast.walk(tree) if isinstance(n, ast.Import | ast.ImportFrom) and n not in tree.body]
        assert not inside and (other in at_top) == (module is solver)
    assert solver.SolverConfig is batched_solver.SolverConfig and solver.SolverResult is batched_solver.SolverResult
