"""Optimiser parameter groups: backbone vs new layers, with the learning-rate multiplier."""

from __future__ import annotations

import torch

from dml_core.models import EmbeddingModel, MultiLevelFusionHead, build_backbone, parameter_groups


def test_groups_partition_the_parameters_and_scale_the_new_layers_rate():
    backbone = build_backbone("googlenet", weights="random")
    head = MultiLevelFusionHead(dict(backbone.level_dims), 8)
    model = EmbeddingModel(backbone, "avg", head)
    groups = parameter_groups(model, lr=1e-5, new_layer_lr_multiplier=10, weight_decay=5e-4)
    assert [group["name"] for group in groups] == ["backbone", "new_layers"]
    assert [group["lr"] for group in groups] == [1e-5, 1e-5 * 10]
    assert all(group["weight_decay"] == 5e-4 for group in groups)
    ids = [{id(p) for p in group["params"]} for group in groups]
    assert ids[0].isdisjoint(ids[1])
    assert ids[0] == {id(p) for p in backbone.parameters()}
    assert ids[1] == {id(p) for p in head.parameters()}
    assert len(ids[0]) + len(ids[1]) == len(list(model.parameters()))
    optimizer = torch.optim.Adam(groups)  # accepted as is; the name key is kept for logging
    assert [group["name"] for group in optimizer.param_groups] == ["backbone", "new_layers"]


def test_a_model_without_new_layers_gets_one_group():
    class BackboneOnly(torch.nn.Module):
        def __init__(self):
            super().__init__()
            self.backbone = torch.nn.Linear(2, 2)

    groups = parameter_groups(BackboneOnly(), lr=0.1, new_layer_lr_multiplier=10)
    assert [group["name"] for group in groups] == ["backbone"]
