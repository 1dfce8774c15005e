import json

import numpy as np
import pytest

from dml_core.errors import InputError
from dml_core.linear.grids import PAPER_GRIDS, thin_grid
from dml_core.linear.protocol import (
    fit_preprocessing,
    grid_points,
    rescore,
    run_protocol_on_arrays,
    run_table2_protocol,
)
from dml_core.linear.solver_config import SolverConfig

SMALL_GRIDS = {
    "euclidean": {},
    "nca": {},
    "lanml_plus": {"lam": (0.5,), "gamma1": (1.0,), "gamma2": (1.0,)},
    "lanml_minus": {"lam": (0.5,), "gamma1": (-1.0,), "gamma2": (1.0,)},
    "pnca": {"alpha": (1.0,)},
}


def test_preprocessing_standardises_on_train_and_reduces_to_150_dimensions():
    rng = np.random.default_rng(0)
    train, test = rng.normal(3.0, 2.0, size=(200, 170)), rng.normal(size=(20, 170))
    apply = fit_preprocessing(train)
    assert apply(train).shape == (200, 150) and apply(test).shape == (20, 150)
    small = rng.normal(5.0, 3.0, size=(40, 4))
    standardised = fit_preprocessing(small)(small)
    np.testing.assert_allclose(standardised.mean(0), 0.0, atol=1e-12)
    np.testing.assert_allclose(standardised.std(0), 1.0, atol=1e-12)


def test_protocol_records_both_k_rules_and_is_deterministic():
    grid = {"lam": (0.1, 1.5), "gamma1": (-1.0,), "gamma2": (1.0,)}
    options = {"n_splits": 2, "seed": 7, "grid": grid, "solver": SolverConfig(max_iterations=60)}
    by_test = run_table2_protocol("Iris", "lanml_minus", k_rule="test", **options)
    by_cv = run_table2_protocol("Iris", "lanml_minus", k_rule="cv", **options)
    assert by_test.method == "LANML-" and by_test.dataset == "Iris"
    assert [s.seed for s in by_test.splits] == [7, 8]
    for split_test, split_cv in zip(by_test.splits, by_cv.splits, strict=True):
        assert split_test.test_accuracy_by_k == split_cv.test_accuracy_by_k  # same seeds, same fits
        assert split_test.hyper_parameters in grid_points(grid)
        assert len(split_test.test_accuracy_by_k) == 40
        assert split_test.accuracy == pytest.approx(100 * max(split_test.test_accuracy_by_k))
        assert split_cv.accuracy == pytest.approx(100 * split_cv.test_accuracy_by_k[split_cv.cv_k - 1])
        assert split_test.accuracy >= split_cv.accuracy
    accuracies = [s.accuracy for s in by_test.splits]
    assert by_test.mean_accuracy == pytest.approx(np.mean(accuracies))
    assert by_test.std_accuracy == pytest.approx(np.std(accuracies, ddof=1))
    assert by_test.settings["grid_is_paper_grid"] is False
    assert rescore(by_test, "cv") == pytest.approx((by_cv.mean_accuracy, by_cv.std_accuracy))
    assert rescore(by_cv.to_dict(), "test") == pytest.approx((by_test.mean_accuracy, by_test.std_accuracy))


@pytest.mark.slow  # starting worker processes takes seconds
def test_parallel_grid_search_gives_the_same_result():
    options = {"n_splits": 1, "grid": {"alpha": (0.5, 2.0)}, "solver": SolverConfig(max_iterations=30)}
    serial = run_table2_protocol("Iris", "pnca", **options)
    parallel = run_table2_protocol("Iris", "pnca", n_jobs=2, **options)
    assert serial.splits[0].hyper_parameters == parallel.splits[0].hyper_parameters
    assert serial.splits[0].test_accuracy_by_k == parallel.splits[0].test_accuracy_by_k
    assert serial.splits[0].cv_accuracy == parallel.splits[0].cv_accuracy


@pytest.mark.parametrize("method", list(SMALL_GRIDS))
def test_every_method_runs_one_split_on_wine(method, tmp_path):
    result = run_table2_protocol(
        "Wine", method, n_splits=1, grid=SMALL_GRIDS[method], solver=SolverConfig(max_iterations=60)
    )
    assert 80.0 <= result.mean_accuracy <= 100.0
    assert result.std_accuracy == 0.0
    saved = json.loads(result.save_json(tmp_path / "result.json").read_text())
    assert saved["mean_accuracy"] == result.mean_accuracy and saved["settings"]["n_splits"] == 1


def test_bad_arguments_are_input_errors():
    X, y = np.zeros((10, 2)), np.repeat([0, 1], 5)
    with pytest.raises(InputError, match="method"):
        run_protocol_on_arrays(X, y, "lmnn")
    with pytest.raises(InputError, match="k_rule"):
        run_protocol_on_arrays(X, y, "euclidean", k_rule="best")
    with pytest.raises(InputError, match="no hyper-parameter"):
        run_protocol_on_arrays(X, y, "pnca", grid={"gamma": (1.0,)})


@pytest.mark.slow
def test_iris_and_wine_end_to_end():
    """The whole protocol, reduced: 2 splits, small grids, every method; sanity bounds, not paper values."""
    grids = {
        "euclidean": {},
        "nca": {},
        "lanml_plus": {"lam": (0.1, 0.9), "gamma1": (1.0,), "gamma2": (2**-2, 2**2)},
        "lanml_minus": {"lam": (0.1, 0.9), "gamma1": (-1.0,), "gamma2": (2**-2, 2**2)},
        "pnca": {"alpha": (2**-2, 2**2)},
    }
    for dataset in ("Iris", "Wine"):
        for method, grid in grids.items():
            result = run_table2_protocol(
                dataset, method, n_splits=2, grid=grid, solver=SolverConfig(max_iterations=100)
            )
            assert len(result.splits) == 2
            assert 85.0 <= result.mean_accuracy <= 100.0, (dataset, method, result.mean_accuracy)


@pytest.mark.slow  # ~7 s: the protocol twice on two data sets
@pytest.mark.parametrize(("dataset", "method"), [("Iris", "lanml_plus"), ("Wine", "lanml_minus")])
def test_batched_grid_search_gives_the_one_at_a_time_result(dataset, method):
    # A thinned paper grid (9 points: lam 0.1, |gamma1| and gamma2 in {2^-5, 1, 2^5}), two splits.
    grid = thin_grid(PAPER_GRIDS[method], 10)
    options = {"n_splits": 2, "grid": grid, "solver": SolverConfig(max_iterations=60)}
    one_at_a_time = run_table2_protocol(dataset, method, batched=False, **options)
    batched = run_table2_protocol(dataset, method, **options)
    assert len(grid_points(grid)) == 9
    for reference, split in zip(one_at_a_time.splits, batched.splits, strict=True):
        assert split.hyper_parameters == reference.hyper_parameters
        assert (split.cv_accuracy, split.cv_k) == (reference.cv_accuracy, reference.cv_k)
        assert split.test_accuracy_by_k == reference.test_accuracy_by_k
        assert split.fit_diagnostics == reference.fit_diagnostics
    assert (batched.mean_accuracy, batched.std_accuracy) == (one_at_a_time.mean_accuracy, one_at_a_time.std_accuracy)


@pytest.mark.slow  # starting worker processes takes seconds
def test_parallel_batched_grid_search_gives_the_same_result():
    grid = thin_grid(PAPER_GRIDS["lanml_plus"], 10)
    options = {"n_splits": 1, "grid": grid, "solver": SolverConfig(max_iterations=20)}
    serial = run_table2_protocol("Iris", "lanml_plus", **options)
    parallel = run_table2_protocol("Iris", "lanml_plus", n_jobs=2, **options)
    assert serial.splits[0].hyper_parameters == parallel.splits[0].hyper_parameters
    assert serial.splits[0].cv_accuracy == parallel.splits[0].cv_accuracy
    assert serial.splits[0].test_accuracy_by_k == parallel.splits[0].test_accuracy_by_k
