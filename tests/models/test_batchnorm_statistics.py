"""Measuring a random backbone's BN statistics: the running mean and variance become the average over the batches
(hand-computed on one BN layer), and nothing else moves."""

import torch
from torch import nn

from dml_core.models import build_backbone
from dml_core.models.batchnorm_statistics import measure_batchnorm_statistics
from dml_core.models.freezing import batchnorm_layers, freeze_batchnorm


def test_the_statistics_are_the_average_over_the_batches_and_nothing_else_moves():
    torch.manual_seed(0)
    layer = nn.Sequential(nn.BatchNorm1d(3))
    frozen = freeze_batchnorm(layer)  # frozen BN (eval mode) stays frozen afterwards
    batches = [torch.randn(8, 3) * 2 + 5, torch.randn(8, 3) + 1]
    weight_before = layer[0].weight.clone()
    assert measure_batchnorm_statistics(layer, iter(batches)) == 2
    bn = layer[0]
    expected_mean = (batches[0].mean(0) + batches[1].mean(0)) / 2
    expected_var = (batches[0].var(0, unbiased=True) + batches[1].var(0, unbiased=True)) / 2
    assert torch.allclose(bn.running_mean, expected_mean) and torch.allclose(bn.running_var, expected_var)
    assert frozen == 1 and not bn.training and bn.momentum == 0.1
    assert torch.equal(bn.weight, weight_before) and not bn.weight.requires_grad


def test_a_random_backbone_in_eval_mode_separates_images_only_with_measured_statistics():
    torch.manual_seed(0)
    backbone = build_backbone("googlenet", weights="random", width=0.125).eval()
    images = torch.rand(6, 3, 64, 64)
    with torch.no_grad():
        before = backbone(images).mean((2, 3))
    measure_batchnorm_statistics(backbone, [torch.rand(16, 3, 64, 64) for _ in range(2)])
    with torch.no_grad():
        after = backbone(images).mean((2, 3))
    assert not any(layer.training for layer in batchnorm_layers(backbone))
    # with mean 0 / variance 1 statistics the signal dies out on its way through the layers; measured, it does not
    assert before.abs().max() < 1e-9
    assert after.abs().mean() > 1e-2 and after.std(0).mean() > 1e-2 * after.abs().mean()
