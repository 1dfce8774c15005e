"""Deterministic kernels are a setting of one run: applied around it (on CUDA too: cuDNN, cuBLAS), recorded in its
results file, and undone after it, so nothing of one run's setting reaches what the process runs next."""

import os

import pytest
import torch

from dml_core.recipes import load_recipe
from dml_core.results import load_results
from dml_core.training import train, trainer
from dml_core.training.run_description import PlannedRun, RunToTrain
from tests.training.tiny_runs import recipe_file, tiny_run


@pytest.fixture
def switches_kept(monkeypatch):
    """The process-wide switches as they were before the test, whatever it does."""
    algorithms = torch.are_deterministic_algorithms_enabled()
    warn_only = torch.is_deterministic_algorithms_warn_only_enabled()
    cudnn = torch.backends.cudnn.deterministic, torch.backends.cudnn.benchmark
    monkeypatch.delenv("CUBLAS_WORKSPACE_CONFIG", raising=False)
    yield
    torch.use_deterministic_algorithms(algorithms, warn_only=warn_only)
    torch.backends.cudnn.deterministic, torch.backends.cudnn.benchmark = cudnn


def _switches() -> tuple:
    return (
        torch.are_deterministic_algorithms_enabled(),
        torch.is_deterministic_algorithms_warn_only_enabled(),
        torch.backends.cudnn.deterministic,
        torch.backends.cudnn.benchmark,
        os.environ.get("CUBLAS_WORKSPACE_CONFIG"),
    )


def _train_tiny(tmp_path, monkeypatch, **training) -> tuple:
    """Train the tiny run; the switches seen while it trained, and its results file."""
    monkeypatch.setenv("DML_DATA_ROOT", str(tmp_path / "data"))
    path = recipe_file(tmp_path, tiny_run(training=training))
    seen, real_train = [], trainer.TrainingRun.train

    def train_and_look(run, progress):
        seen.append(_switches())
        real_train(run, progress)

    monkeypatch.setattr(trainer.TrainingRun, "train", train_and_look)
    results = load_results(train(RunToTrain(PlannedRun(load_recipe(path), tmp_path / "run"), progress=False)))
    return seen[0], results


@pytest.mark.slow
@pytest.mark.usefixtures("glyph_data_root")
def test_a_cpu_run_trains_deterministically_and_leaves_the_process_s_switches_as_it_found_them(
    tmp_path, monkeypatch, switches_kept
):
    torch.use_deterministic_algorithms(False)
    torch.backends.cudnn.benchmark = True
    before = _switches()
    during, results = _train_tiny(tmp_path, monkeypatch)
    assert during[:2] == (True, True)  # deterministic kernels, warn-only, for the run
    assert _switches() == before
    assert results.environment["determinism"]["deterministic"] is True
    assert results.environment["determinism"]["deterministic_algorithms"] is True
    assert results.environment["cuda_graphs"] is False  # recorded; a CPU run replays none


@pytest.mark.slow
@pytest.mark.usefixtures("glyph_data_root")
def test_a_run_that_trades_determinism_for_speed_says_so_and_changes_its_hash(tmp_path, monkeypatch, switches_kept):
    torch.use_deterministic_algorithms(True, warn_only=True)
    before = _switches()
    during, results = _train_tiny(tmp_path, monkeypatch, deterministic=False)
    assert during[0] is False and _switches() == before
    assert results.environment["determinism"]["deterministic"] is False
    assert results.recipe.content["training"]["deterministic"] is False


def test_a_cuda_run_sets_the_cuda_determinism_switches_and_undoes_them(switches_kept, monkeypatch):
    from dml_core.training.determinism import run_determinism

    torch.use_deterministic_algorithms(False)
    torch.backends.cudnn.deterministic, torch.backends.cudnn.benchmark = False, True
    before = _switches()
    with run_determinism(torch.device("cuda", 0), deterministic=True) as record:
        assert _switches() == (True, True, True, False, ":4096:8")
    assert _switches() == before
    assert record == {
        "deterministic": True,
        "deterministic_algorithms": True,
        "warn_only": True,
        "cudnn_deterministic": True,
        "cudnn_benchmark": False,
        "cublas_workspace_config": ":4096:8",
    }
    with run_determinism(torch.device("cuda", 0), deterministic=False):
        assert _switches() == (False, False, False, True, None)  # cuDNN benchmarks: the fast algorithms
    assert _switches() == before
    monkeypatch.setenv("CUBLAS_WORKSPACE_CONFIG", ":16:8")  # the other deterministic setting, chosen before
    with run_determinism(torch.device("cuda", 0), deterministic=True):
        assert os.environ["CUBLAS_WORKSPACE_CONFIG"] == ":16:8"


def test_the_default_keeps_every_recipe_s_hash(tmp_path):
    default = load_recipe(recipe_file(tmp_path, tiny_run()))
    explicit = load_recipe(recipe_file(tmp_path, tiny_run(training={"deterministic": True})))
    assert explicit.content_hash() == default.content_hash()
    assert "deterministic" not in default.computation()["training"]
