"""The shared readings of reproduce/readings.yaml as the pinned recipes wire them: every run of every paper rests on
``precision`` and ``selection``, and each value changes what it names: the precision of the model's training forward
on CUDA (recorded in the results file; a CPU run is fp32 whatever the value) and the evaluation a run reports.

No GPU here: the CUDA path is checked by the decision the trainer's autocast takes for a CUDA device, and by that
decision opened as the CPU's bf16 autocast in the trainer's own step."""

from contextlib import nullcontext

import pytest
import torch

from dml_core.recipes import load_catalog
from dml_core.recipes.settings import forward_precision
from dml_core.results import ResultsFile, deep_results_payload, validate_results
from dml_core.tier import Tier
from dml_core.training import step
from tests.training.test_evaluation_precision import RecordingModel

CATALOG = load_catalog()
FIRST_RUNS = [paper.runs[0] for paper in CATALOG.values()]  # one run of each paper
# A hand-made history whose best test R@1 is not the last evaluation.
HISTORY = [
    {"iteration": 100, "epoch": 1.0, "metrics": {"R@1": 50.0, "NMI": 40.0}, "seconds": 1.0},
    {"iteration": 200, "epoch": 2.0, "metrics": {"R@1": 58.0, "NMI": 41.0}, "seconds": 1.0},
    {"iteration": 300, "epoch": 3.0, "metrics": {"R@1": 55.0, "NMI": 44.0}, "seconds": 1.0},
]


def _name(run) -> str:
    return run.paper


def _results(recipe, device_type: str, evaluations=HISTORY) -> ResultsFile:
    """The results file the trainer would write for ``recipe`` run on ``device_type`` with ``evaluations``."""
    payload = deep_results_payload(
        recipe,
        recipe_path=None,
        overrides=[],
        tier=Tier.FULL,
        weights_id=None,
        index_hashes={},
        git={"commit": "abc", "dirty": False},
        environment={"device": device_type},
        protocol={},
        evaluations=evaluations,
        timing={"train_seconds": 3.0, "data_wait_seconds": 1.0, "compute_seconds": 2.0, "evaluation_seconds": 1.0},
        total=evaluations[-1]["iteration"],
        resumed_runs=0,
        world_size=1,
        device_type=device_type,
    )
    return validate_results(payload, "synthetic")


@pytest.mark.parametrize("run", FIRST_RUNS, ids=_name)
def test_every_run_rests_on_both_shared_readings_at_its_papers_default(run):
    assert all({"precision", "selection"} <= set(other.reading_names) for other in CATALOG[run.paper].runs)
    # every paper trains in fp32, as the papers did (anml with its own why: its losses round cosines before scaling)
    assert run.default_reading("precision") == "fp32"
    assert run.default_reading("selection") == "best-r1"
    assert run.recipe().readings["precision"] == run.default_reading("precision")


@pytest.mark.parametrize("run", FIRST_RUNS, ids=_name)
def test_precision_decides_the_autocast_of_the_training_forward_on_cuda_and_never_on_the_cpu(run):
    for value in ("fp32", "bf16"):
        recipe = run.recipe({"precision": value})
        assert recipe.training.precision == value and forward_precision("cuda", recipe.training.precision) == value
        assert forward_precision("cpu", recipe.training.precision) == "fp32"
        assert _results(recipe, "cuda").precision == value
        assert _results(recipe, "cpu").precision == "fp32"
        assert recipe.variant == ("" if value == run.default_reading("precision") else f"precision={value}")


def _autocast_as_on_cuda(device: torch.device, precision: str):
    """The trainer's decision for a CUDA device, opened as the CPU's bf16 autocast (no GPU here)."""
    bf16 = forward_precision("cuda", precision) == "bf16"
    return torch.autocast("cpu", dtype=torch.bfloat16) if bf16 else nullcontext()


def _autocast_of_the_forward(training) -> tuple[bool, torch.dtype]:
    """Whether the model's forward ran under autocast in one step of the trainer's ``train_step``, and the loss's
    dtype."""
    model = RecordingModel()
    optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
    scheduler = torch.optim.lr_scheduler.ConstantLR(optimizer)
    loss = step.train_step(
        model, lambda output, _: output.pow(2).mean(), optimizer, scheduler, torch.randn(8, 4), torch.zeros(8), training
    )
    [autocast] = model.autocast_seen
    return autocast, loss.dtype


@pytest.mark.parametrize("value", ["fp32", "bf16"])
def test_the_training_forward_autocasts_as_the_reading_says_on_a_cuda_like_path_and_never_on_the_cpu(
    value, monkeypatch
):
    training = CATALOG["cgml"].runs[0].recipe({"precision": value}).training
    assert _autocast_of_the_forward(training) == (False, torch.float32)  # the CPU: fp32 whatever the reading
    monkeypatch.setattr(step, "autocast", _autocast_as_on_cuda)
    assert _autocast_of_the_forward(training) == (value == "bf16", torch.float32)  # the loss in fp32 either way


@pytest.mark.parametrize("run", FIRST_RUNS, ids=_name)
def test_selection_reports_the_best_test_r1_or_the_last_evaluation_and_records_both(run):
    picked = {value: _results(run.recipe({"selection": value}), "cpu") for value in ("best-r1", "final")}
    assert picked["best-r1"].selection.iteration == 200 and picked["best-r1"].metric_samples("R@1") == [58.0]
    assert picked["final"].selection.iteration == 300 and picked["final"].metric_samples("R@1") == [55.0]
    assert picked["best-r1"].selections == picked["final"].selections  # both picks, whatever the reading
    assert picked["best-r1"].final_samples("R@1") == [55.0]  # the tables' '· final' beside the default
    assert picked["final"].recipe.content["variant"] == "selection=final"
