"""The resume part's kill, resume and comparison on the CPU, where a run is deterministic: the resumed run's final
parameters are bitwise those of the uninterrupted one, and a changed parameter is seen. It is also the suite's test
of ``dml train --resume`` after a SIGKILL (the trainer's other stops are in tests/training/test_trainer.py): the
resumed run's results file holds the evaluations and the selection of the uninterrupted one, its evaluation from
before the kill included, and the git state of both starts."""

import copy
import sys
import time

import pytest
import torch

from dml_core.gpu_check.part import PartStopped
from dml_core.gpu_check.resume import (
    RESUME_RECIPE,
    parameter_differences,
    resume_check,
    train_killed_after_first_checkpoint,
)
from dml_core.results import load_results
from dml_core.training.checkpoint import load_checkpoint, save_checkpoint


def _small_recipe() -> dict:
    recipe = copy.deepcopy(RESUME_RECIPE)  # the part's run, shorter and narrower: the CPU is slow
    # an evaluation at the first checkpoint (before the kill) and two after it
    recipe["training"].update(iterations=12, eval_every=4, checkpoint_every=4)
    recipe["model"]["width"] = 0.125
    return recipe


@pytest.mark.slow
@pytest.mark.usefixtures("glyph_data_root")
def test_a_run_killed_after_its_first_checkpoint_resumes_to_bitwise_equal_parameters_and_the_same_results(tmp_path):
    outcome = resume_check(_small_recipe(), tmp_path / "work", torch.device("cpu"), tmp_path / "data")
    assert outcome.figures["equal"] == "bitwise", outcome
    killed_at = outcome.figures["killed_at_iteration"]
    assert killed_at in (4, 8)
    assert outcome.figures["device"] == "cpu" and outcome.figures["resumed_runs"] == 1
    reference, resumed = (load_results(tmp_path / "work" / run / "results.json") for run in ("reference", "resumed"))
    assert [e.iteration for e in resumed.evaluations] == [4, 8, 12]
    assert [e.metrics for e in resumed.evaluations] == [e.metrics for e in reference.evaluations]
    assert resumed.selection == reference.selection
    # Both starts' git states, with the iteration where each took over (a resume may run newer code).
    assert [segment["from"] for segment in resumed.git["segments"]] == [0, killed_at]
    assert resumed.git["commit"] == resumed.git["segments"][0]["commit"] and "segments" not in reference.git
    # the comparison sees a change of one parameter tensor (as a resume that lost a step would make)
    reference = tmp_path / "work" / "reference" / "checkpoint.pt"
    state = load_checkpoint(reference)
    name = next(iter(state["model"]))
    state["model"][name] = state["model"][name] * (1 + 1e-3)
    save_checkpoint(tmp_path / "changed.pt", state)
    differences = parameter_differences(reference, tmp_path / "changed.pt")
    assert differences[f"model.{name}"] == pytest.approx(1e-3, rel=1e-2)
    assert sum(value > 0 for value in differences.values()) == 1
    assert any(key.startswith("loss.") for key in differences)  # the margin loss's learned beta is compared too


def test_the_check_s_time_limit_ends_the_wait_for_a_checkpoint_without_failing_the_part(tmp_path):
    never_checkpoints = [sys.executable, "-c", "import time; time.sleep(60)"]
    started = time.monotonic()
    with pytest.raises(PartStopped, match="time limit reached before the run to kill wrote its first checkpoint"):
        train_killed_after_first_checkpoint(never_checkpoints, tmp_path / "run", check_deadline=started + 1)
    assert time.monotonic() - started < 50  # killed at the limit, not after the sleep or the part's own 300 s
