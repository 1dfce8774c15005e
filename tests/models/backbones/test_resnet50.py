"""ResNet-50 (timm): torchvision's weight file loads strictly and gives torchvision's features."""

from __future__ import annotations

import torch
from torchvision.models import resnet50

from dml_core.input_spec import IMAGENET_RGB
from dml_core.models.backbones.resnet50 import ResNet50


def test_torchvision_weight_layout_loads_and_features_match_torchvision():
    torch.manual_seed(4)
    published = resnet50()  # the layout of resnet50-0676ba61.pth (= timm resnet50.tv_in1k)
    ours = ResNet50()
    ours.load_published_weights(published.state_dict(), "tv")
    published.fc = torch.nn.Identity()
    images = torch.randn(2, 3, 64, 64)
    with torch.no_grad():
        expected = published.eval()(images)
        actual = ours.eval()(images).mean(dim=(2, 3))
    torch.testing.assert_close(actual, expected, rtol=1e-5, atol=1e-6)


def test_shapes_at_224_px():
    with torch.no_grad():
        levels = ResNet50().eval().forward_levels(torch.randn(1, 3, 224, 224))
    assert {name: tuple(value.shape) for name, value in levels.items()} == {
        "layer1": (1, 256, 56, 56),
        "layer2": (1, 512, 28, 28),
        "layer3": (1, 1024, 14, 14),
        "layer4": (1, 2048, 7, 7),
    }
    assert ResNet50.input_spec == IMAGENET_RGB
    assert ResNet50.feature_dim == 2048
