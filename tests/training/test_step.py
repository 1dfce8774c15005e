"""The shared training step: gradient clipping (``training.grad_clip_norm``) on every optimised parameter."""

from __future__ import annotations

import pytest
import torch
from torch import nn

from dml_core.losses import build_loss
from dml_core.recipes.settings import TrainingSettings
from dml_core.training.step import optimised_parameters, train_step


def one_step(grad_clip_norm: float | None) -> tuple[list[torch.Tensor], list[torch.Tensor], list[torch.Tensor]]:
    """One SGD step of a small model with a proxy loss whose gradient norm is far above 10: the gradients
    after the step, and the parameters before and after it (model and proxies)."""
    torch.manual_seed(0)
    model = nn.Sequential(nn.Linear(6, 8), nn.Tanh(), nn.Linear(8, 4))
    loss_fn = build_loss("proxy_anchor", num_classes=3, embedding_dim=4, alpha=64.0)
    scale = 1000.0  # a loss scaled up, as a diverging step would give
    optimizer = torch.optim.SGD([*model.parameters(), *loss_fn.parameters()], lr=0.1)
    scheduler = torch.optim.lr_scheduler.ConstantLR(optimizer, factor=1.0)
    before = [p.detach().clone() for p in optimised_parameters(optimizer)]
    images, labels = torch.randn(12, 6), torch.arange(3).repeat(4)
    settings = TrainingSettings(iterations=1, grad_clip_norm=grad_clip_norm)
    train_step(model, lambda e, y: scale * loss_fn(e, y), optimizer, scheduler, images, labels, settings)
    after = optimised_parameters(optimizer)
    return [p.grad.clone() for p in after], before, [p.detach().clone() for p in after]


def total_norm(tensors: list[torch.Tensor]) -> float:
    return torch.linalg.vector_norm(torch.stack([torch.linalg.vector_norm(t) for t in tensors])).item()


def test_clipping_caps_the_total_gradient_norm_and_keeps_its_direction():
    raw, _, _ = one_step(None)
    clipped, before, after = one_step(10.0)
    assert total_norm(raw) > 100  # the test is not trivial
    assert total_norm(clipped) == pytest.approx(10.0, rel=1e-4)  # at most 10, and here exactly the cap
    for g_raw, g_clipped in zip(raw, clipped, strict=True):  # one factor for every parameter, proxies included
        torch.testing.assert_close(g_clipped, g_raw * (10.0 / total_norm(raw)), rtol=1e-4, atol=1e-7)
    for b, a, g in zip(before, after, clipped, strict=True):  # the optimiser stepped with the clipped gradient
        torch.testing.assert_close(a, b - 0.1 * g)


def test_a_cap_above_the_norm_and_no_cap_leave_the_gradient_alone():
    raw, _, _ = one_step(None)
    loose, _, _ = one_step(1e9)
    for g_raw, g_loose in zip(raw, loose, strict=True):
        torch.testing.assert_close(g_loose, g_raw)
