"""The precision part's arithmetic on the CPU, where the trainer never autocasts: bf16 there is the fp32 step
exactly, and with the CPU's bf16 autocast standing in for CUDA's the step moves, by less than another batch moves it;
the same for a main recipe's steps (its backbone's convolutions too); the time limit stops it between recipes."""

from types import SimpleNamespace

import pytest
import torch

from dml_core.gpu_check import part as part_module
from dml_core.gpu_check.experiments import precision
from dml_core.gpu_check.parity import one_step
from dml_core.gpu_check.part import CheckContext, PartStopped
from dml_core.training import step
from tests.benchmarks.precision_cpu import cpu_autocast_for_cuda
from tests.gpu_check.experiments.small_recipes import narrow_smoke_recipe

CPU = torch.device("cpu")


def test_on_the_cpu_the_trainer_keeps_fp32_so_bf16_changes_nothing():
    figures = precision.precision_figures("triplet", CPU)
    assert figures["bf16_rel"] == 0.0 and figures["ratio"] == 0.0
    assert figures["other_batch_rel"] > 0.1  # another batch of the same classes is another step


def _cpu_autocast_for_cuda(monkeypatch):
    monkeypatch.setattr(step, "autocast", cpu_autocast_for_cuda)


def test_under_an_autocast_the_step_moves_by_a_rounding_and_the_ratio_reads_it_against_another_batch(monkeypatch):
    _cpu_autocast_for_cuda(monkeypatch)
    figures = precision.precision_figures("triplet", CPU)
    assert 1e-4 < figures["bf16_rel"] < 0.1  # bf16 keeps about 3 significant digits of each activation
    assert figures["ratio"] == pytest.approx(figures["bf16_rel"] / figures["other_batch_rel"])
    assert figures["ratio"] < 1


def test_the_other_batch_has_the_same_labels_and_other_features():
    reference, other = one_step("contrastive", CPU), one_step("contrastive", CPU, noise_seed=precision.OTHER_BATCH)
    assert reference.before.keys() == other.before.keys()
    assert precision.whole_update_difference(reference.updates(), other.updates()) > 0


RUN = "gpw/pair-e-cub200"


@pytest.mark.usefixtures("glyph_data_root")
def test_a_recipes_steps_keep_fp32_on_the_cpu_and_move_under_an_autocast_less_than_another_batch(tmp_path, monkeypatch):
    context = CheckContext(CPU, tmp_path / "work", tmp_path / "data", tmp_path)
    figures = precision.recipe_precision_figures(narrow_smoke_recipe(RUN), context)
    assert figures["bf16_rel"] == 0.0 and figures["other_batch_rel"] > 0.1 and figures["ratio_to_nudge"] == 0.0
    assert figures["steps"] == precision.RECIPE_STEPS and figures["batch"] > 0
    _cpu_autocast_for_cuda(monkeypatch)
    figures = precision.recipe_precision_figures(narrow_smoke_recipe(RUN), context)
    assert figures["bf16_rel"] > 0 and figures["ratio"] == pytest.approx(
        figures["bf16_rel"] / figures["other_batch_rel"]
    )
    assert figures["ratio"] < 1, figures  # measured: 0.04 (gpw, one CPU); another batch is another step
    assert figures["nudge_rel"] > 0 and figures["ratio_to_nudge"] == figures["bf16_rel"] / figures["nudge_rel"]


def test_the_part_reports_every_loss_and_recipe_and_never_fails(tmp_path, monkeypatch):
    monkeypatch.setattr(precision, "LOSSES", {"triplet": None, "contrastive": None})
    monkeypatch.setattr(
        precision, "recipe_precision_figures", lambda recipe, context: {"ratio": 0.5, "ratio_to_nudge": 30}
    )
    context = CheckContext(device=CPU, work_dir=tmp_path, data_root=tmp_path, report_dir=tmp_path)
    outcome = precision.run_precision(context, runs=("a/one", "b/two"), recipe_of=lambda run: run)
    assert set(outcome.figures["losses"]) == {"triplet", "contrastive"}
    assert outcome.figures["recipes"] == {"a/one": {"ratio": 0.5, "ratio_to_nudge": 30}} | {
        "b/two": {"ratio": 0.5, "ratio_to_nudge": 30}
    }
    assert outcome.summary.startswith("2 losses: bf16 moves an update by")
    assert "; 2 recipes: bf16 moves an update by 5.0e-01 of another batch's move (median)" in outcome.summary
    assert outcome.summary.endswith("at most 5.0e-01 (a/one) and 30-30x a nudge's")


def test_the_time_limit_stops_the_part_between_recipes_with_the_figures_of_those_done(tmp_path, monkeypatch):
    clock = {"now": 0.0}
    monkeypatch.setattr(part_module, "time", SimpleNamespace(monotonic=lambda: clock["now"]))
    monkeypatch.setattr(precision, "LOSSES", {"triplet": None, "contrastive": None})

    def figures_taking_a_minute(recipe, context):
        clock["now"] += 60
        return {"ratio": 0.5}

    monkeypatch.setattr(precision, "recipe_precision_figures", figures_taking_a_minute)
    context = CheckContext(CPU, tmp_path / "work", tmp_path / "data", tmp_path, deadline=30.0)
    with pytest.raises(PartStopped, match=r"^time limit reached after 2 losses and 1 of 2 recipes$") as stopped:
        precision.run_precision(context, runs=("a/one", "b/two"), recipe_of=lambda run: run)
    assert list(stopped.value.figures["recipes"]) == ["a/one"] and set(stopped.value.figures["losses"]) == {
        "triplet",
        "contrastive",
    }


def test_a_recipe_that_cannot_run_is_reported_beside_the_others(tmp_path, monkeypatch):
    monkeypatch.setattr(precision, "LOSSES", {"triplet": None})

    def figures_or_error(recipe, context):
        if recipe == "b/two":
            raise RuntimeError("out of memory")
        return {"ratio": 0.5, "ratio_to_nudge": 30}

    monkeypatch.setattr(precision, "recipe_precision_figures", figures_or_error)
    context = CheckContext(device=CPU, work_dir=tmp_path, data_root=tmp_path, report_dir=tmp_path)
    outcome = precision.run_precision(context, runs=("a/one", "b/two"), recipe_of=lambda run: run)
    assert outcome.figures["recipes"]["b/two"] == {"error": "RuntimeError: out of memory"}
    assert "; 1 recipes: bf16 moves an update by 5.0e-01" in outcome.summary
    assert outcome.summary.endswith("30-30x a nudge's; 1 could not run")
