"""Optimisers and learning-rate schedules from a recipe. Schedules step once per iteration."""

from __future__ import annotations

import bisect
from collections.abc import Callable

import torch
from torch import nn

from dml_core.models import parameter_groups
from dml_core.recipes.optimizers import OPTIMIZER_KINDS
from dml_core.recipes.settings import OptimizerSettings, ScheduleSettings
from dml_core.registry import Registry

OPTIMIZERS: Registry[type[torch.optim.Optimizer]] = Registry(
    "optimizer",
    "optimizer.name",
    {name: getattr(torch.optim, kind.torch_class) for name, kind in OPTIMIZER_KINDS.items()},
)


def build_optimizer(
    settings: OptimizerSettings, model: nn.Module, loss: nn.Module, loss_lr_multiplier: float
) -> torch.optim.Optimizer:
    """Backbone at ``lr``, new layers at ``lr * new_layer_lr_multiplier``, a loss's own parameters (proxies) at
    ``lr * loss_lr_multiplier``; one weight decay for all."""
    groups = parameter_groups(model, settings.lr, settings.new_layer_lr_multiplier, settings.weight_decay)
    loss_params = [p for p in loss.parameters() if p.requires_grad]
    if loss_params:
        groups.append(
            {
                "name": "loss",
                "params": loss_params,
                "lr": settings.lr * loss_lr_multiplier,
                "weight_decay": settings.weight_decay,
            }
        )
    extra = {"momentum": settings.momentum} if OPTIMIZER_KINDS[settings.name].momentum else {}
    return OPTIMIZERS.lookup(settings.name)(groups, lr=settings.lr, **extra)


def lr_factor(settings: ScheduleSettings, iteration: int, iterations_per_unit: int) -> float:
    """The multiplier of every group's base learning rate at ``iteration`` (0-based).

    >>> s = ScheduleSettings(name="multistep", milestones=[2, 4], gamma=0.5)
    >>> [lr_factor(s, i, 1) for i in range(6)]
    [1.0, 1.0, 0.5, 0.5, 0.25, 0.25]
    """
    return SCHEDULES.lookup(settings.name)(settings, iteration // iterations_per_unit)


def _constant(settings: ScheduleSettings, unit: int) -> float:
    return 1.0


def _step(settings: ScheduleSettings, unit: int) -> float:
    return settings.gamma ** (unit // settings.step_size)


def _multistep(settings: ScheduleSettings, unit: int) -> float:
    return settings.gamma ** bisect.bisect_right(sorted(settings.milestones), unit)


# A schedule: (its settings, the units run so far) -> the factor of every group's base learning rate.
SCHEDULES: Registry[Callable[[ScheduleSettings, int], float]] = Registry(
    "schedule", "schedule.name", {"constant": _constant, "step": _step, "multistep": _multistep}
)


def build_scheduler(
    settings: ScheduleSettings, optimizer: torch.optim.Optimizer, iterations_per_epoch: int
) -> torch.optim.lr_scheduler.LambdaLR:
    per_unit = iterations_per_epoch if settings.unit == "epoch" else 1
    return torch.optim.lr_scheduler.LambdaLR(optimizer, lambda iteration: lr_factor(settings, iteration, per_unit))
