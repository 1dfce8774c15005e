"""The precision part's arithmetic on the CPU, where the trainer never autocasts: bf16 there is the fp32 step
exactly, and with the CPU's bf16 autocast standing in for CUDA's the step moves, by less than another batch moves it."""

import pytest
import torch

from dml_core.gpu_check import precision
from dml_core.gpu_check.parity import one_step
from dml_core.gpu_check.part import CheckContext
from dml_core.training import step

CPU = torch.device("cpu")


def test_on_the_cpu_the_trainer_keeps_fp32_so_bf16_changes_nothing():
    figures = precision.precision_figures("triplet", CPU)
    assert figures["bf16_rel"] == 0.0 and figures["ratio"] == 0.0
    assert figures["other_batch_rel"] > 0.1  # another batch of the same classes is another step


def test_under_an_autocast_the_step_moves_by_a_rounding_and_the_ratio_reads_it_against_another_batch(monkeypatch):
    monkeypatch.setattr(step, "autocast", lambda device, enabled: torch.autocast("cpu", dtype=torch.bfloat16,
                                                                                   enabled=enabled))  # fmt: skip
    figures = precision.precision_figures("triplet", CPU)
    assert 1e-4 < figures["bf16_rel"] < 0.1  # bf16 keeps about 3 significant digits of each activation
    assert figures["ratio"] == pytest.approx(figures["bf16_rel"] / figures["other_batch_rel"])
    assert figures["ratio"] < 1


def test_the_other_batch_has_the_same_labels_and_other_features():
    reference, other = one_step("contrastive", CPU), one_step("contrastive", CPU, noise_seed=precision.OTHER_BATCH)
    assert reference.before.keys() == other.before.keys()
    assert precision.whole_update_difference(reference.updates(), other.updates()) > 0


def test_the_part_reports_every_loss_and_never_fails(tmp_path, monkeypatch):
    monkeypatch.setattr(precision, "LOSSES", {"triplet": None, "contrastive": None})
    context = CheckContext(device=CPU, work_dir=tmp_path, data_root=tmp_path, report_dir=tmp_path)
    outcome = precision.run_precision(context)
    assert set(outcome.figures) == {"triplet", "contrastive"}
    assert outcome.summary.startswith("2 losses; bf16 moves a step by")
