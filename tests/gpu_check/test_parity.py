"""The parity part's arithmetic, on the CPU against itself (a real CPU-vs-GPU verdict needs a GPU): every registered
loss takes the step, two CPU steps agree exactly, and a difference above the tolerances is caught."""

import dataclasses

import pytest
import torch

from dml_core.evaluation.knn import exact_fp32_matmul
from dml_core.gpu_check import parity
from dml_core.gpu_check.parity import (
    LOSS_RTOL,
    UPDATE_RTOL,
    compare_steps,
    one_step,
    parity_batch,
    relative_difference,
    within_tolerance,
)
from dml_core.losses import LOSSES

CPU = torch.device("cpu")


@pytest.mark.parametrize("name", sorted(LOSSES))
def test_every_loss_steps_and_two_cpu_steps_agree_exactly(name):
    first, second = one_step(name, CPU), one_step(name, CPU)
    comparison = compare_steps(first, second)
    assert comparison["loss_rel"] == 0.0 and comparison["update_rel_max"] == 0.0
    assert within_tolerance(comparison)
    assert torch.isfinite(torch.tensor(first.loss))
    updates = first.updates()
    assert any(name.startswith("model.trunk") for name in updates)
    assert all(update.norm() > 0 for update in updates.values()), "every parameter must move in the step"


def test_a_difference_above_either_tolerance_is_caught():
    reference = one_step("proxy_anchor", CPU)
    name = "model.trunk.0.weight"
    update = reference.updates()[name]
    nudged = {**reference.after, name: reference.after[name] + 2 * UPDATE_RTOL * update}
    comparison = compare_steps(reference, dataclasses.replace(reference, after=nudged))
    assert comparison["worst_parameter"] == name
    assert comparison["update_rel_max"] == pytest.approx(2 * UPDATE_RTOL, rel=1e-6)
    assert not within_tolerance(comparison)
    off_loss = dataclasses.replace(reference, loss=reference.loss * (1 + 2 * LOSS_RTOL))
    assert not within_tolerance(compare_steps(reference, off_loss))
    assert within_tolerance(compare_steps(reference, dataclasses.replace(reference, loss=reference.loss * (1 + 1e-6))))


def test_rounding_noise_of_an_update_zero_in_exact_arithmetic_is_no_difference_and_a_real_one_still_is(monkeypatch):
    """DRML's updater bias is added to every embedding alike and cancels in every distance: its update is fp32
    rounding noise, which moved by 64% between an H200 and the CPU (the first GPU check) and moves here as much
    when the batch moves by 1e-6. The floor (1e-4 of the step's update) passes that and still catches a real
    difference in the same tensor."""
    bias = "model.head.updater.bias"
    reference = one_step("drml", CPU)
    features, labels = parity_batch()
    generator = torch.Generator().manual_seed(2)
    nudged_batch = features * (1 + 1e-6 * torch.randn(features.shape, generator=generator))
    monkeypatch.setattr(parity, "parity_batch", lambda noise_seed=None: (nudged_batch, labels))
    other = one_step("drml", CPU)
    assert relative_difference(other.updates()[bias], reference.updates()[bias]) > UPDATE_RTOL  # noise, per tensor
    assert within_tolerance(compare_steps(reference, other))
    real = {**reference.after, bias: reference.after[bias] + 1e-2}  # a lost or doubled term of a bias's gradient
    assert compare_steps(reference, dataclasses.replace(reference, after=real))["worst_parameter"] == bias
    assert not within_tolerance(compare_steps(reference, dataclasses.replace(reference, after=real)))


def test_relative_difference_of_zero_updates_is_zero_and_of_a_new_one_is_huge():
    zero = torch.zeros(3)
    assert relative_difference(zero, zero) == 0.0
    assert relative_difference(torch.tensor([0.0, 1e-6, 0.0]), zero) == pytest.approx(1e6)


def test_the_batch_is_two_class_aligned_halves_and_the_precision_is_restored():
    features, labels = parity_batch()
    assert features.shape == (32, 24)
    assert torch.equal(labels[:16], labels[16:]) and torch.equal(torch.bincount(labels), torch.full((8,), 4))
    matmul = torch.backends.cuda.matmul
    before = matmul.fp32_precision
    matmul.fp32_precision = "tf32"
    try:
        with exact_fp32_matmul():
            assert matmul.fp32_precision == "ieee"
        assert matmul.fp32_precision == "tf32"
    finally:
        matmul.fp32_precision = before
