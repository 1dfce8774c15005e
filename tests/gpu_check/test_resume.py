"""The resume part's kill, resume and comparison on the CPU, where a run is deterministic: the resumed run's final
parameters are bitwise those of the uninterrupted one, and a changed parameter is seen."""

import copy

import pytest
import torch

from dml_core.gpu_check.resume import RESUME_RECIPE, parameter_differences, resume_check
from dml_core.training.checkpoint import load_checkpoint, save_checkpoint


def _small_recipe() -> dict:
    recipe = copy.deepcopy(RESUME_RECIPE)  # the part's run, shorter and narrower: the CPU is slow
    recipe["training"].update(iterations=12, eval_every=12, checkpoint_every=2)
    recipe["model"]["width"] = 0.125
    return recipe


@pytest.mark.slow
def test_a_run_killed_after_its_first_checkpoint_resumes_to_bitwise_equal_parameters(tmp_path):
    outcome = resume_check(_small_recipe(), tmp_path / "work", torch.device("cpu"), tmp_path / "data")
    assert outcome.figures["equal"] == "bitwise", outcome
    assert 2 <= outcome.figures["killed_at_iteration"] < 12
    assert outcome.figures["device"] == "cpu" and outcome.figures["resumed_runs"] == 1
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
