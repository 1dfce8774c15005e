"""Frozen BatchNorm and the backbone warm-up freeze: two details papers leave out that move results by points.

Frozen BN (gpw: "we freeze all the batch normalization layers"): every BN layer of the backbone stays in eval
mode (running statistics are used, never updated) and its affine weight and bias get ``requires_grad=False``.
``model.train()`` would switch BN back to training mode, so ``EmbeddingModel.train`` re-applies the state
after every call (``apply_backbone_freezing``).

Warm-up freeze (gpw: only the new layers train for the first 5 epochs): the whole backbone is frozen: no
gradients and eval mode, so its BN statistics do not move either. ``BackboneWarmup`` switches it per epoch.
"""

from __future__ import annotations

from typing import Protocol

from torch import nn
from torch.nn.modules.batchnorm import _BatchNorm


def batchnorm_layers(module: nn.Module) -> list[_BatchNorm]:
    """All BatchNorm layers (1d, 2d, 3d, SyncBatchNorm) inside ``module``."""
    return [layer for layer in module.modules() if isinstance(layer, _BatchNorm)]


def freeze_batchnorm(module: nn.Module) -> int:
    """Put every BN layer of ``module`` in eval mode and stop gradients to its affine parameters.

    Returns the number of BN layers frozen.
    """
    layers = batchnorm_layers(module)
    for layer in layers:
        layer.eval()
        for parameter in layer.parameters(recurse=False):
            parameter.requires_grad_(False)
    return len(layers)


def apply_backbone_freezing(backbone: nn.Module, frozen_bn: bool, backbone_frozen: bool) -> None:
    """Set ``backbone``'s train/eval mode and ``requires_grad`` flags for the two freezing options.

    Called after every ``train()`` and whenever an option changes, so the flags never drift: unfreezing the
    backbone after warm-up leaves frozen BN frozen.
    """
    if backbone_frozen:
        backbone.eval()
    for parameter in backbone.parameters():
        parameter.requires_grad_(not backbone_frozen)
    if frozen_bn:
        freeze_batchnorm(backbone)


class FreezableModel(Protocol):
    def set_backbone_frozen(self, frozen: bool) -> None: ...


class BackboneWarmup:
    """Freeze the backbone for the first ``epochs`` epochs (0-based epoch numbers), then train it.

    Call ``on_epoch_start(model, epoch)`` before each epoch; it returns whether the backbone is frozen.
    """

    def __init__(self, epochs: int) -> None:
        if epochs < 0:
            raise ValueError(f"warm-up epochs: expected >= 0, found {epochs}")
        self.epochs = epochs

    def on_epoch_start(self, model: FreezableModel, epoch: int) -> bool:
        frozen = epoch < self.epochs
        model.set_backbone_frozen(frozen)
        return frozen
