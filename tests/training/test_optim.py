"""Optimiser groups (backbone / new layers / loss parameters) and per-iteration schedules."""

import pytest
import torch

from dml_core.losses import build_loss
from dml_core.models import EmbeddingModel, LinearEmbedding, build_backbone
from dml_core.recipes.settings import OptimizerSettings, ScheduleSettings
from dml_core.training.optim import build_optimizer, build_scheduler


def _model():
    backbone = build_backbone("bn_inception", weights="random")
    return EmbeddingModel(backbone, "avg", LinearEmbedding(backbone.feature_dim, 8))


def test_groups_and_learning_rates():
    model = _model()
    loss = build_loss("proxy_anchor", num_classes=5, embedding_dim=8)
    settings = OptimizerSettings(name="adamw", lr=1e-4, weight_decay=5e-4, new_layer_lr_multiplier=10)
    optimizer = build_optimizer(settings, model, loss, loss_lr_multiplier=100)
    lrs = {group["name"]: group["lr"] for group in optimizer.param_groups}
    assert lrs == pytest.approx({"backbone": 1e-4, "new_layers": 1e-3, "loss": 1e-2})
    assert all(group["weight_decay"] == 5e-4 for group in optimizer.param_groups)
    assert isinstance(optimizer, torch.optim.AdamW)


@pytest.mark.parametrize(
    ("schedule", "per_epoch", "expected"),
    [
        (ScheduleSettings(name="step", step_size=2, gamma=0.1), 1, [1, 1, 0.1, 0.1, 0.01]),
        (ScheduleSettings(name="multistep", unit="epoch", milestones=[1], gamma=0.5), 2, [1, 1, 0.5, 0.5, 0.5]),
        (ScheduleSettings(), 1, [1, 1, 1, 1, 1]),
    ],
)
def test_schedules_step_per_iteration(schedule, per_epoch, expected):
    parameter = torch.nn.Parameter(torch.zeros(1))
    optimizer = torch.optim.SGD([parameter], lr=1.0)
    scheduler = build_scheduler(schedule, optimizer, per_epoch)
    seen = []
    for _ in expected:
        seen.append(optimizer.param_groups[0]["lr"])
        optimizer.step()
        scheduler.step()
    assert seen == pytest.approx(expected)
