"""GoogLeNet (Inception v1) from torchvision, as a feature extractor; ``width`` < 1 narrows every channel count for
the CPU mini tier.

A documented deviation: the old DML papers used the BVLC Caffe GoogLeNet (no BatchNorm, LRN layers, BGR 0-255 input),
whose BN-free weights no maintained PyTorch package ships. torchvision's is a BatchNorm variant with ImageNet weights
(``googlenet-1378be20.pth``) ported from TensorFlow, so numbers from it come from the papers' closest maintained
relative, not their backbone.
"""

from __future__ import annotations

from types import MappingProxyType

import torch
from torch import nn

from dml_core.input_spec import IMAGENET_RGB
from dml_core.models.backbones.base import WIDTHS, Backbone, narrowed


def narrowed_blocks(width: float) -> list:
    """torchvision's GoogLeNet building blocks taking the published channel counts and building ``width`` x them
    (the RGB input of the first convolution excepted)."""
    # torchvision only where a model is built: its import is heavy (its ops load torch._dynamo)
    from torchvision.models.googlenet import BasicConv2d, Inception, InceptionAux

    def conv_block(in_channels: int, out_channels: int, **kwargs) -> nn.Module:
        in_channels = in_channels if in_channels == 3 else narrowed(in_channels, width)
        return BasicConv2d(in_channels, narrowed(out_channels, width), **kwargs)

    def inception_block(in_channels: int, *branch_channels: int, conv_block=None) -> nn.Module:
        return Inception(narrowed(in_channels, width), *(narrowed(c, width) for c in branch_channels))

    return [conv_block, inception_block, InceptionAux]


class GoogLeNet(Backbone):
    """torchvision GoogLeNet without its classifier; ``forward`` gives the inception5b map (N, 1024 x width, h, w)."""

    name = "googlenet"
    input_spec = IMAGENET_RGB
    feature_dim = 1024
    level_dims = MappingProxyType({"inception3": 480, "inception4": 832, "inception5": 1024})
    widths = WIDTHS
    # The published file holds the classifier and the two auxiliary classifiers, which training never uses.
    unused_weight_prefixes = ("fc.", "aux1.", "aux2.")

    def __init__(self, width: float = 1.0) -> None:
        super().__init__()
        self.set_width(width)
        blocks = {} if width == 1.0 else {"blocks": narrowed_blocks(width)}
        # torchvision only where a model is built: its import is heavy (its ops load torch._dynamo)
        from torchvision.models import googlenet

        # transform_input turns ImageNet-normalised RGB into the [-1, 1] scaling the TensorFlow port was trained with;
        # always on, so pretrained and random runs see one input path and the input spec stays IMAGENET_RGB.
        self.net = googlenet(weights=None, aux_logits=False, transform_input=True, init_weights=True, **blocks)
        # Pooling and heads are separate modules in this suite.
        self.net.avgpool = nn.Identity()
        self.net.dropout = nn.Identity()
        self.net.fc = nn.Identity()

    def published_module(self) -> nn.Module:
        return self.net

    def forward_levels(self, images: torch.Tensor) -> dict[str, torch.Tensor]:
        net = self.net
        x = net._transform_input(images)
        x = net.maxpool1(net.conv1(x))
        x = net.maxpool2(net.conv3(net.conv2(x)))
        inception3 = net.inception3b(net.inception3a(x))
        x = net.maxpool3(inception3)
        for block in (net.inception4a, net.inception4b, net.inception4c, net.inception4d, net.inception4e):
            x = block(x)
        inception4 = x
        inception5 = net.inception5b(net.inception5a(net.maxpool4(inception4)))
        return {"inception3": inception3, "inception4": inception4, "inception5": inception5}
