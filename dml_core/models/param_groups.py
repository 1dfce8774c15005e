"""Optimiser parameter groups: the pretrained backbone and the new layers, so new layers can learn faster.

gpw gives new FC layers 10x the backbone's learning rate; DRML 1e-4 vs 1e-5. Parameters frozen now (frozen BN,
warm-up) stay in their group: PyTorch's optimisers skip a parameter whose ``.grad`` is None, so a frozen
parameter is not moved (weight decay included), and one released after warm-up trains with its group's rate.
"""

from __future__ import annotations

from typing import Any

from torch import nn


def parameter_groups(
    model: nn.Module, lr: float, new_layer_lr_multiplier: float = 1.0, weight_decay: float = 0.0
) -> list[dict[str, Any]]:
    """Two optimiser groups for a model with a ``backbone`` attribute: ``"backbone"`` at ``lr`` and
    ``"new_layers"`` (every other parameter: heads, proxies a loss registered on the model) at
    ``lr * new_layer_lr_multiplier``. Both use ``weight_decay``. Empty groups are left out.
    """
    backbone_ids = {id(parameter) for parameter in model.backbone.parameters()}
    backbone = [parameter for parameter in model.parameters() if id(parameter) in backbone_ids]
    new_layers = [parameter for parameter in model.parameters() if id(parameter) not in backbone_ids]
    groups = [
        {"name": "backbone", "params": backbone, "lr": lr, "weight_decay": weight_decay},
        {
            "name": "new_layers",
            "params": new_layers,
            "lr": lr * new_layer_lr_multiplier,
            "weight_decay": weight_decay,
        },
    ]
    return [group for group in groups if group["params"]]
