"""Image transforms driven by the backbone's :class:`InputSpec` and the recipe's
:class:`~dml_core.recipes.settings.TransformSettings` (``data.transforms``).

Order: resize (``squash`` to ``resize`` x ``resize`` as Caffe did, or ``shorter_side`` to ``resize`` keeping
the aspect ratio) -> train: random crop of ``crop_size`` (or RandomResizedCrop straight from the decoded
image, with ``rrc_scale``; the resize step is skipped then, as RandomResizedCrop sets the scale itself) and
optional horizontal flip / eval: centre crop -> float in [0, 1] -> times ``value_scale`` -> channel order ->
(x - mean) / std.
"""

from __future__ import annotations

import torch
from torchvision.transforms import v2

from dml_core.input_spec import InputSpec
from dml_core.recipes.settings import TransformSettings


class ToInputSpec(torch.nn.Module):
    """A float RGB tensor in [0, 1] -> the backbone's convention (scale, channel order, mean/std)."""

    def __init__(self, spec: InputSpec) -> None:
        super().__init__()
        self.spec = spec
        self.register_buffer("mean", torch.tensor(spec.mean, dtype=torch.float32).view(3, 1, 1))
        self.register_buffer("std", torch.tensor(spec.std, dtype=torch.float32).view(3, 1, 1))

    def forward(self, image: torch.Tensor) -> torch.Tensor:
        image = image * self.spec.value_scale
        if self.spec.channel_order == "BGR":
            image = image.flip(-3)
        return (image - self.mean) / self.std


def resize_step(config: TransformSettings) -> v2.Transform:
    """The resize of the eval and random-crop paths (also what the image cache stores)."""
    size = (config.resize, config.resize) if config.resize_mode == "squash" else config.resize
    return v2.Resize(size, interpolation=v2.InterpolationMode.BILINEAR, antialias=True)


def build_transform(input_spec: InputSpec, config: TransformSettings, train: bool) -> v2.Compose:
    """PIL RGB image -> tensor (3, crop, crop) in ``input_spec``'s convention; random only when ``train``."""
    crop = config.crop_size or input_spec.input_size
    steps: list[torch.nn.Module] = [v2.ToImage()]
    if train and config.train_crop == "random_resized_crop":
        steps.append(v2.RandomResizedCrop(crop, scale=config.rrc_scale, antialias=True))
    elif train:
        steps += [resize_step(config), v2.RandomCrop(crop)]
    else:
        steps += [resize_step(config), v2.CenterCrop(crop)]
    if train and config.hflip:
        steps.append(v2.RandomHorizontalFlip())
    steps += [v2.ToDtype(torch.float32, scale=True), ToInputSpec(input_spec)]
    return v2.Compose(steps)
