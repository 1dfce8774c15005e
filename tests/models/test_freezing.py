"""Frozen BatchNorm and the warm-up freeze, observed across real optimiser steps on BN-Inception."""

from __future__ import annotations

import pytest
import torch

from dml_core.models import BackboneWarmup, EmbeddingModel, LinearEmbedding, build_backbone, parameter_groups
from dml_core.models.freezing import batchnorm_layers, freeze_batchnorm


def _model(frozen_bn: bool) -> EmbeddingModel:
    torch.manual_seed(0)
    return EmbeddingModel(build_backbone("bn_inception", weights="random"), "avg", LinearEmbedding(1024, 16), frozen_bn)


def _train_steps(model: EmbeddingModel, steps: int = 2) -> None:
    # AdamW with weight decay: decay must not touch frozen parameters either.
    groups = parameter_groups(model, lr=1e-2, new_layer_lr_multiplier=10, weight_decay=0.1)
    optimizer = torch.optim.AdamW(groups, foreach=False)  # foreach's first step is slow on 2 CPU cores
    for _ in range(steps):
        model.train()  # every call must re-apply the freeze
        loss = model(torch.randn(2, 3, 32, 32) * 50).pow(2).sum()
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()


def _bn_state(model: EmbeddingModel) -> dict[str, torch.Tensor]:
    return {
        name: value.clone() for name, value in model.backbone.state_dict().items() if name.split(".")[0].endswith("_bn")
    }


def _clone(module: torch.nn.Module) -> dict[str, torch.Tensor]:
    return {name: value.clone() for name, value in module.state_dict().items()}


def test_frozen_bn_keeps_statistics_and_affine_parameters_bit_identical():
    model = _model(frozen_bn=True)
    bn_before, conv_before, head_before = (
        _bn_state(model),
        _clone(model.backbone.conv1_7x7_s2),
        _clone(model.head),
    )
    _train_steps(model)
    bn_after = _bn_state(model)
    assert bn_after.keys() == bn_before.keys() and len(bn_before) == 5 * 69  # 69 BN layers, 5 tensors each
    for name in bn_before:
        assert torch.equal(bn_after[name], bn_before[name]), name
    assert not torch.equal(model.backbone.conv1_7x7_s2.weight, conv_before["weight"])
    assert not torch.equal(model.head.fc.weight, head_before["fc.weight"])
    assert model.training and model.backbone.training
    assert all(not layer.training for layer in batchnorm_layers(model.backbone))
    assert all(not p.requires_grad for layer in batchnorm_layers(model.backbone) for p in layer.parameters())


def test_without_frozen_bn_the_statistics_move():  # the control: the invariant above can fail
    model = _model(frozen_bn=False)
    before = _bn_state(model)
    _train_steps(model, steps=1)
    after = _bn_state(model)
    assert not torch.equal(after["conv1_7x7_s2_bn.running_mean"], before["conv1_7x7_s2_bn.running_mean"])
    assert not torch.equal(after["conv1_7x7_s2_bn.weight"], before["conv1_7x7_s2_bn.weight"])


def test_warmup_freezes_the_whole_backbone_then_releases_it_but_not_frozen_bn():
    model = _model(frozen_bn=True)
    warmup = BackboneWarmup(epochs=1)
    assert warmup.on_epoch_start(model, 0) is True
    backbone_before, bn_before = _clone(model.backbone), _bn_state(model)
    head_before = _clone(model.head)
    _train_steps(model, steps=1)
    for name, value in model.backbone.state_dict().items():
        assert torch.equal(value, backbone_before[name]), name
    assert not model.backbone.training
    assert not torch.equal(model.head.fc.weight, head_before["fc.weight"])

    assert warmup.on_epoch_start(model, 1) is False
    _train_steps(model, steps=1)
    assert model.backbone.training
    assert not torch.equal(model.backbone.conv1_7x7_s2.weight, backbone_before["conv1_7x7_s2.weight"])
    for name, value in _bn_state(model).items():
        assert torch.equal(value, bn_before[name]), name


def test_freeze_batchnorm_counts_and_touches_only_bn():
    model = torch.nn.Sequential(torch.nn.Conv2d(3, 4, 1), torch.nn.BatchNorm2d(4), torch.nn.BatchNorm1d(4))
    assert freeze_batchnorm(model) == 2
    assert model[0].weight.requires_grad and model[0].training
    assert not model[1].weight.requires_grad and not model[1].training
    with pytest.raises(ValueError, match="warm-up epochs"):
        BackboneWarmup(-1)
