"""Image transforms driven by the backbone's :class:`InputSpec` and the recipe's
:class:`~dml_core.recipes.settings.TransformSettings` (``data.transforms``).

They come in two halves: the uint8 steps (resize, crop, flip: ``build_pixel_transform``) run in the loaders' workers,
and the elementwise float steps (``ToModelInput``) run on the whole batch where it trains, so that a quarter of the
bytes cross the process boundary and the copy to a GPU. Each float step is one correctly rounded fp32 operation per
element, so the batch is bitwise what ``build_transform`` gives image by image, on any device (docs/training.md).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

import torch

from dml_core.input_spec import InputSpec
from dml_core.recipes.settings import TransformSettings

if TYPE_CHECKING:
    from torchvision.transforms import v2


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
    # torchvision only where a transform is built: its import is heavy (its ops load torch._dynamo)
    from torchvision.transforms import v2

    size = (config.resize, config.resize) if config.resize_mode == "squash" else config.resize
    return v2.Resize(size, interpolation=v2.InterpolationMode.BILINEAR, antialias=True)


class ToModelInput(ToInputSpec):
    """uint8 RGB images (3, H, W) or a batch of them -> float32 in the backbone's convention: scaled to [0, 1], then
    ``ToInputSpec``'s arithmetic (its spec and buffers: times ``value_scale``, channel order, (x - mean) / std).
    Moved to a device (``.to``), it converts batches there. Only uint8: it works in place on the float tensor it
    makes, which a float input would be itself.

    >>> from dml_core.input_spec import IMAGENET_RGB
    >>> ToModelInput(IMAGENET_RGB)(torch.zeros(3, 2, 2))
    Traceback (most recent call last):
    TypeError: ToModelInput: expected uint8 images, found torch.float32
    """

    def forward(self, images: torch.Tensor) -> torch.Tensor:
        if images.dtype != torch.uint8:
            raise TypeError(f"ToModelInput: expected uint8 images, found {images.dtype}")
        # ToInputSpec's arithmetic in place on the new float tensor, the channel flip (a permutation, which commutes
        # with elementwise ops) on the uint8 pixels before it: no float temporaries, the same values (each op the
        # same correctly rounded one, and x * 1.0 is x).
        if self.spec.channel_order == "BGR":
            images = images.flip(-3)
        # torchvision only where a transform is built: its import is heavy (its ops load torch._dynamo)
        from torchvision.transforms import v2

        batch = v2.functional.to_dtype(images, torch.float32, scale=True)
        if self.spec.value_scale != 1.0:
            batch.mul_(self.spec.value_scale)
        return batch.sub_(self.mean).div_(self.std)


def build_transform(input_spec: InputSpec, config: TransformSettings, train: bool) -> v2.Compose:
    """PIL RGB image -> tensor (3, crop, crop) in ``input_spec``'s convention; random only when ``train``:
    ``build_pixel_transform`` then ``ToModelInput``, image by image."""
    # torchvision only where a transform is built: its import is heavy (its ops load torch._dynamo)
    from torchvision.transforms import v2

    pixels = build_pixel_transform(input_spec, config, train)
    return v2.Compose([*pixels.transforms, ToModelInput(input_spec)])


def build_pixel_transform(input_spec: InputSpec, config: TransformSettings, train: bool) -> v2.Compose:
    """PIL RGB image -> uint8 tensor (3, crop, crop): resize, crop and flip; random only when ``train``.

    Resize (``squash`` to ``resize`` x ``resize`` as Caffe did, or ``shorter_side`` to ``resize`` keeping the aspect
    ratio), then a random crop of ``crop_size`` and an optional horizontal flip when training, a centre crop when not.
    RandomResizedCrop (``rrc_scale``) cuts straight from the decoded image and skips the resize, as it sets the
    scale itself.
    """
    # torchvision only where a transform is built: its import is heavy (its ops load torch._dynamo)
    from torchvision.transforms import v2

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
    steps.append(v2.ToPureTensor())  # a plain tensor through the loader's collation and pickling
    return v2.Compose(steps)
