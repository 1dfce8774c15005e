"""BatchNorm statistics for a backbone built from random weights.

Published weights bring their BN running statistics (ImageNet's); a random backbone has none: running mean 0
and variance 1, so in eval mode (every evaluation, and all of training under frozen BN) its BN layers pass the
shrinking signal of its random convolutions on unnormalised, and the embedding is close to a constant. The mini
tier therefore measures the statistics on a few training batches first, the way a pretrained network's were
measured on its data: forward passes only, no labels, no parameter moved.
"""

from __future__ import annotations

from collections.abc import Iterable

import torch
from torch import nn

from dml_core.models.freezing import batchnorm_layers


def measure_batchnorm_statistics(backbone: nn.Module, batches: Iterable[torch.Tensor]) -> int:
    """Replace the running mean and variance of every BN layer of ``backbone`` by their average over ``batches``
    (each layer's cumulative average, as ``momentum=None`` computes it); return the number of batches used.
    Parameters, momentum and each layer's train/eval mode are left as they were.
    """
    layers = batchnorm_layers(backbone)
    saved = [(layer.momentum, layer.training) for layer in layers]
    for layer in layers:
        layer.reset_running_stats()
        layer.momentum = None
        layer.train()
    used = 0
    with torch.no_grad():
        for images in batches:
            backbone(images)
            used += 1
    for layer, (momentum, training) in zip(layers, saved, strict=True):
        layer.momentum = momentum
        layer.train(training)
    return used
