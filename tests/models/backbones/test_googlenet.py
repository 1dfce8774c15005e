"""GoogLeNet: torchvision's published layout loads strictly and the features equal torchvision's own."""

from __future__ import annotations

import torch
from torchvision.models import googlenet

from dml_core.input_spec import IMAGENET_RGB
from dml_core.models.backbones.googlenet import GoogLeNet


def test_torchvision_layout_with_aux_classifiers_loads_and_features_match_torchvision():
    torch.manual_seed(3)
    # What googlenet-1378be20.pth holds: the network with both auxiliary classifiers and the 1000-way fc.
    published = googlenet(weights=None, aux_logits=True, transform_input=True, init_weights=True)
    ours = GoogLeNet()
    ours.load_published_weights(published.state_dict(), "tv")
    published.fc = torch.nn.Identity()  # torchvision's forward then returns the avg-pooled inception5b map
    images = torch.randn(2, 3, 64, 64)
    with torch.no_grad():
        expected = published.eval()(images)
        actual = ours.eval()(images).mean(dim=(2, 3))
    torch.testing.assert_close(actual, expected, rtol=0, atol=0)


def test_shapes_at_224_px():
    with torch.no_grad():
        levels = GoogLeNet().eval().forward_levels(torch.randn(1, 3, 224, 224))
    assert {name: tuple(value.shape) for name, value in levels.items()} == {
        "inception3": (1, 480, 28, 28),
        "inception4": (1, 832, 14, 14),
        "inception5": (1, 1024, 7, 7),
    }
    assert GoogLeNet.input_spec == IMAGENET_RGB
