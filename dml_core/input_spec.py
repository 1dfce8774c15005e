"""What a backbone expects of its input images. Backbones declare it; image transforms obey it.

Shared by ``dml_core.models`` (which declares one per backbone) and ``dml_core.data`` (whose transforms
turn decoded RGB images into exactly this), so neither package imports the other.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal


@dataclass(frozen=True)
class InputSpec:
    """Pixel convention of a backbone's input tensor (N, 3, H, W).

    ``value_scale`` is the value of a full-intensity pixel before normalisation (1.0 for torchvision-style
    models, 255.0 for Caffe ports); then ``(pixel - mean) / std`` per channel, in ``channel_order``.
    """

    channel_order: Literal["RGB", "BGR"]
    value_scale: float
    mean: tuple[float, float, float]
    std: tuple[float, float, float]
    input_size: int = 224


IMAGENET_RGB = InputSpec("RGB", 1.0, (0.485, 0.456, 0.406), (0.229, 0.224, 0.225), 224)
# The Caffe-ported BN-Inception: BGR, 0-255, mean subtraction only.
CAFFE_BGR = InputSpec("BGR", 255.0, (104.0, 117.0, 128.0), (1.0, 1.0, 1.0), 224)
