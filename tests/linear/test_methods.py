import numpy as np
import pytest

from dml_core.linear.grids import PAPER_GRIDS
from dml_core.linear.knn_accuracy import knn_accuracy_by_k
from dml_core.linear.methods import DISPLAY_NAMES, METHODS, paper_initial_metric, transform_with

HYPER_PARAMETERS = {
    "euclidean": {},
    "nca": {},
    "lanml_plus": {"lam": 0.5, "gamma1": 1.0, "gamma2": 1.0},
    "lanml_minus": {"lam": 0.5, "gamma1": -1.0, "gamma2": 1.0},
    "pnca": {"alpha": 1.0},
}


def _one_signal_many_noise(seed, n=90):
    """Class given by feature 0; five features of pure noise drown it under the Euclidean metric."""
    rng = np.random.default_rng(seed)
    y = rng.integers(0, 3, n)
    X = np.column_stack([y + 0.15 * rng.normal(size=n), rng.normal(size=(n, 5)) * 1.5])
    return X, y


def test_registries_agree_and_grids_are_the_papers():
    assert set(METHODS) == set(PAPER_GRIDS) == set(DISPLAY_NAMES) == set(HYPER_PARAMETERS)
    lanml = PAPER_GRIDS["lanml_plus"]
    assert lanml["lam"] == (0.1, 0.3, 0.5, 0.7, 0.9, 1.1, 1.3, 1.5)
    assert len(lanml["gamma1"]) == 21 and lanml["gamma1"][0] == 2**-5 and lanml["gamma1"][-1] == 2**5
    assert lanml["gamma1"][1] == pytest.approx(2**-4.5)
    assert PAPER_GRIDS["lanml_minus"]["gamma1"] == tuple(-g for g in lanml["gamma1"])
    assert PAPER_GRIDS["lanml_minus"]["gamma2"] == lanml["gamma2"]
    assert PAPER_GRIDS["pnca"]["alpha"] == tuple(2.0**e for e in range(-8, 11))
    np.testing.assert_allclose(paper_initial_metric(16, 2), np.eye(2) / 4)


@pytest.mark.parametrize("method", ["nca", "lanml_plus", "lanml_minus", "pnca"])
def test_learned_metrics_beat_euclidean_knn_on_noisy_features(method):
    train_X, train_y = _one_signal_many_noise(0)
    test_X, test_y = _one_signal_many_noise(1)
    euclidean = knn_accuracy_by_k(train_X, train_y, test_X, test_y, max_k=5)[4]
    fit = METHODS[method](train_X, train_y, seed=0, **HYPER_PARAMETERS[method])
    assert fit.transform.shape[1] == 6
    learned = knn_accuracy_by_k(transform_with(fit, train_X), train_y, transform_with(fit, test_X), test_y, 5)[4]
    assert learned > euclidean + 0.1
    assert learned > 0.9


@pytest.mark.parametrize("method", list(METHODS))
def test_fits_are_deterministic(method):
    X, y = _one_signal_many_noise(2, n=30)
    first = METHODS[method](X, y, seed=3, **HYPER_PARAMETERS[method])
    second = METHODS[method](X, y, seed=3, **HYPER_PARAMETERS[method])
    np.testing.assert_array_equal(first.transform, second.transform)


def test_gamma_signs_are_checked():
    X, y = _one_signal_many_noise(3, n=20)
    with pytest.raises(ValueError, match="LANML\\+"):
        METHODS["lanml_plus"](X, y, lam=0.5, gamma1=-1.0, gamma2=1.0)
    with pytest.raises(ValueError, match="LANML-"):
        METHODS["lanml_minus"](X, y, lam=0.5, gamma1=1.0, gamma2=1.0)
