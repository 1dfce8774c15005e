"""Optimiser groups (backbone / new layers / loss parameters) and per-iteration schedules."""

import pytest
import torch

from dml_core.losses import build_loss
from dml_core.models import EmbeddingModel, LinearEmbedding, build_backbone
from dml_core.recipes.optimizers import OPTIMIZER_KINDS, state_slots
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


class _TwoLayers(torch.nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.backbone, self.head = torch.nn.Linear(3, 3), torch.nn.Linear(3, 2)

    def forward(self, x):
        return self.head(self.backbone(x))


@pytest.mark.parametrize("momentum", [0.0, 0.9])
@pytest.mark.parametrize("name", list(OPTIMIZER_KINDS))
def test_every_declared_optimiser_builds_and_keeps_the_state_the_disk_estimate_counts(name, momentum):
    """One declaration serves the schema, the builder and the plan's disk estimate: each optimiser a recipe may name
    builds, takes the momentum where it declares one, and after a step keeps ``state_slots`` tensors the size of
    each parameter (what the checkpoint holds beside the model)."""
    model = _TwoLayers()
    optimizer = build_optimizer(OptimizerSettings(name=name, lr=0.1, momentum=momentum), model, torch.nn.Module(), 1.0)
    assert optimizer.defaults.get("momentum") == (momentum if OPTIMIZER_KINDS[name].momentum else None)
    model(torch.ones(4, 3)).square().sum().backward()
    optimizer.step()
    parameters = list(model.parameters())
    kept = [v for p in parameters for v in optimizer.state[p].values() if torch.is_tensor(v) and v.shape == p.shape]
    assert len(kept) == state_slots(name, momentum) * len(parameters)


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
