"""ResNet-50 from timm, as a feature extractor.

Pretrained tag: ``resnet50.tv_in1k``, i.e. torchvision's original ImageNet weights (``IMAGENET1K_V1``, file
``resnet50-0676ba61.pth``, top-1 76.1). These are the weights the DML papers of 2019-2021 fine-tuned; timm's
default ``resnet50`` tag (a1_in1k, trained with a modern recipe) is a different, stronger model. timm's ResNet
uses torchvision's parameter names, so the torchvision file loads into it directly, from a local file, without
the Hugging Face hub.
"""

from __future__ import annotations

from types import MappingProxyType

import torch
from torch import nn

from dml_core.input_spec import IMAGENET_RGB
from dml_core.models.backbones.base import Backbone

PRETRAINED_TAG = "resnet50.tv_in1k"


class ResNet50(Backbone):
    """timm ResNet-50 without pooling and classifier; ``forward`` gives the layer4 map (N, 2048, h, w)."""

    name = "resnet50"
    input_spec = IMAGENET_RGB
    feature_dim = 2048
    level_dims = MappingProxyType({"layer1": 256, "layer2": 512, "layer3": 1024, "layer4": 2048})
    unused_weight_prefixes = ("fc.",)

    def __init__(self) -> None:
        super().__init__()
        # timm only where a model is built: its import is heavy (it loads torchvision, whose ops load torch._dynamo)
        import timm

        # pretrained=False: weights only ever come from a verified local file (dml_core.models.weights).
        self.net = timm.create_model("resnet50", pretrained=False, num_classes=0, global_pool="")

    def published_module(self) -> nn.Module:
        return self.net

    def forward_levels(self, images: torch.Tensor) -> dict[str, torch.Tensor]:
        net = self.net
        x = net.maxpool(net.act1(net.bn1(net.conv1(images))))
        levels = {}
        for name in self.level_names:
            x = getattr(net, name)(x)
            levels[name] = x
        return levels
