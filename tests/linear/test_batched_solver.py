"""The batched solver against a plain one-problem loop of the same algorithm (the reference, kept here as the
test's oracle; the package runs one problem as a batch of one): the same fits, bit for bit."""

import numpy as np
import pytest
from sklearn.model_selection import StratifiedKFold

from dml_core.linear.batched_solver import SolverResult, minimise_many_over_psd
from dml_core.linear.grids import PAPER_GRIDS
from dml_core.linear.mahalanobis import distance_gradient_to_metric, pairwise_mahalanobis, project_psd
from dml_core.linear.methods import METHODS, fit_lanml_many
from dml_core.linear.protocol import fit_preprocessing, grid_points
from dml_core.linear.solver import minimise_over_psd
from dml_core.linear.solver_config import SolverConfig
from dml_core.linear.uci import load_uci


def _one_problem_loop(objective, X, initial_metric, config):
    """The algorithm of ``dml_core.linear.solver``'s docstring, written plainly for one problem."""
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
            previous, metric, value = value, candidate, candidate_value
            gradient = distance_gradient_to_metric(X, candidate_distance_gradient)
            step *= config.grow
            if previous - value <= config.tolerance * abs(previous):
                stop_reason = "tolerance"
                break
        else:
            step *= config.shrink
    return SolverResult(metric, float(value), float(initial_value), evaluations, stop_reason)


def _least_squares(target):
    def objective(distances):
        residual = distances - target
        return np.sum(residual**2, axis=(-2, -1)), 2.0 * residual

    return objective


@pytest.mark.parametrize("batch_size", [1, 3, 50])
def test_every_problem_gets_the_sequential_result_whatever_the_batch(batch_size):
    # Problems that stop at different times (budget, tolerance) so that the working set is refilled.
    rng = np.random.default_rng(0)
    X = rng.normal(size=(12, 3))
    targets = np.stack([pairwise_mahalanobis(X, np.diag(rng.uniform(0.1, 3.0, 3))) for _ in range(7)])
    initial = np.stack([np.eye(3) * rng.uniform(0.5, 2.0) for _ in range(7)])
    config = SolverConfig(max_iterations=60, tolerance=1e-2)

    def objectives(distances, problems):
        return _least_squares(targets[problems])(distances)

    batched = minimise_many_over_psd(objectives, X, initial, config, batch_size)
    for target, start, result in zip(targets, initial, batched, strict=True):

        def objective(D, t=target):
            return _least_squares(t)(D)

        for reference in (
            _one_problem_loop(objective, X, start, config),
            minimise_over_psd(objective, X, start, config),
        ):
            np.testing.assert_array_equal(result.metric, reference.metric)
            assert (result.objective, result.initial_objective) == (reference.objective, reference.initial_objective)
            assert (result.evaluations, result.stop_reason) == (reference.evaluations, reference.stop_reason)
    assert {r.stop_reason for r in batched} == {"tolerance", "max_iterations"}


def _first_fold(dataset):
    X, y = load_uci(dataset)
    X = fit_preprocessing(X)(X)
    train, _ = next(StratifiedKFold(n_splits=5, shuffle=True, random_state=0).split(X, y))
    return X[train], y[train]


@pytest.mark.slow  # ~5 s in all: 2 x 2 x 10 fits of up to 300 evaluations, each twice
@pytest.mark.parametrize("dataset", ["Iris", "Wine"])
@pytest.mark.parametrize("method", ["lanml_plus", "lanml_minus"])
def test_lanml_grid_fits_equal_the_one_at_a_time_fits(dataset, method):
    X, y = _first_fold(dataset)
    points = grid_points(PAPER_GRIDS[method])[::353]  # 10 points spread over lambda, gamma1, gamma2
    many = fit_lanml_many(method, X, y, points, solver=SolverConfig(), batch_size=4)
    stop_reasons = set()
    for point, fit in zip(points, many, strict=True):
        reference = METHODS[method](X, y, **point)
        np.testing.assert_allclose(fit.transform, reference.transform, rtol=1e-9, atol=1e-12)
        assert fit.diagnostics == reference.diagnostics  # evaluations, stop reason, objective values
        stop_reasons.add(fit.diagnostics["stop_reason"])
    assert len(stop_reasons) >= 1


def test_lanml_many_checks_the_sign_of_gamma1():
    X, y = np.eye(4), np.array([0, 0, 1, 1])
    with pytest.raises(ValueError, match="LANML-"):
        fit_lanml_many("lanml_minus", X, y, [{"lam": 0.1, "gamma1": 1.0, "gamma2": 1.0}])
