"""Training augmentation on a batch of cached images, on the training device: crop, flip, normalise.

It is a drop-in replacement for the PIL path (``ImageDataset`` + ``build_transform`` under ``SeededDataset``):
each sample's random draws come from torchvision's own parameter samplers (``RandomCrop.make_params``,
``RandomResizedCrop.make_params``, the flip's ``torch.rand(1) < p``) under the same per-sample seed and in the
same order as the PIL pipeline, and the pixels go through the same torchvision kernels. For the same
(position, seed) keys both paths give identical tensors (tested on the CPU). Only the heavy part moves: JPEG
decoding and resizing happened once, in ``image_cache``.

Random crops are gathered for the whole batch in one indexing operation; random resized crops are cut and
resized per sample (different box sizes), on the device.
"""

from __future__ import annotations

import torch
from torchvision.transforms import v2

from dml_core.data.image_cache import ImageCache
from dml_core.data.transforms import ToInputSpec
from dml_core.errors import InputError
from dml_core.input_spec import InputSpec
from dml_core.recipes.settings import TransformSettings
from dml_core.seeding import seeded_cpu_rng


class BatchAugmentation:
    """``(positions, seeds) -> (B, 3, crop, crop)`` float tensors in the backbone's convention."""

    def __init__(self, cache: ImageCache, input_spec: InputSpec, config: TransformSettings) -> None:
        self.cache = cache
        self.config = config
        self.crop = config.crop_size or input_spec.input_size
        if config.train_crop == "random_resized_crop":
            self.sampler = v2.RandomResizedCrop(self.crop, scale=config.rrc_scale, antialias=True)
        else:
            self.sampler = v2.RandomCrop(self.crop)
        self.to_input_spec = ToInputSpec(input_spec).to(cache.pixels.device)
        # Geometry on the host too: drawing boxes must not wait for the device.
        self.heights = cache.heights.cpu().tolist()
        self.widths = cache.widths.cpu().tolist()
        self.offsets = cache.offsets.cpu().tolist()

    def draw(self, heights: list[int], widths: list[int], seeds: list[int]) -> tuple[list[dict], list[bool]]:
        """Each sample's crop box and flip, from torchvision's samplers under the sample's seed."""
        boxes, flips = [], []
        for height, width, seed in zip(heights, widths, seeds, strict=True):
            with seeded_cpu_rng(seed):
                boxes.append(self.sampler.make_params([torch.empty(3, height, width, device="meta")]))
                flips.append(bool(self.config.hflip and torch.rand(1) < 0.5))
        return boxes, flips

    def _image(self, position: int) -> torch.Tensor:
        start = int(self.offsets[position])
        height, width = self.heights[position], self.widths[position]
        return self.cache.pixels[start : start + 3 * height * width].view(3, height, width)

    def _random_crops(self, positions: torch.Tensor, tops: torch.Tensor, lefts: torch.Tensor) -> torch.Tensor:
        """One gather for the whole batch: flat index of every output pixel of every sample."""
        device = self.cache.pixels.device
        offsets, heights, widths = (t[positions] for t in (self.cache.offsets, self.cache.heights, self.cache.widths))
        steps = torch.arange(self.crop, device=device)
        channel = torch.arange(3, device=device)
        index = (
            offsets[:, None, None, None]
            + channel[None, :, None, None] * (heights * widths)[:, None, None, None]
            + (tops[:, None, None, None] + steps[None, None, :, None]) * widths[:, None, None, None]
            + (lefts[:, None, None, None] + steps[None, None, None, :])
        )
        return self.cache.pixels[index]

    def __call__(self, positions: list[int], seeds: list[int]) -> torch.Tensor:
        device = self.cache.pixels.device
        try:
            boxes, flips = self.draw([self.heights[p] for p in positions], [self.widths[p] for p in positions], seeds)
        except ValueError as error:  # an image smaller than the crop
            raise InputError(f"image cache: {error}; use a larger resize or a smaller crop_size") from None
        # positions, crop corners and flips: one small tensor to the device per batch, copied without waiting for it
        tops, lefts = [box["top"] for box in boxes], [box["left"] for box in boxes]
        keys = host_rows_to_device([positions, tops, lefts, flips], device)
        if self.config.train_crop == "random_resized_crop":
            batch = torch.stack(
                [
                    v2.functional.resized_crop(
                        self._image(position),
                        box["top"],
                        box["left"],
                        box["height"],
                        box["width"],
                        [self.crop, self.crop],
                        antialias=True,
                    )
                    for position, box in zip(positions, boxes, strict=True)
                ]
            )
        else:
            batch = self._random_crops(keys[0], keys[1], keys[2])
        if any(flips):
            flip = keys[3].bool()[:, None, None, None]
            batch = torch.where(flip, batch.flip(-1), batch)
        return self.to_input_spec(v2.functional.to_dtype(batch, torch.float32, scale=True))


def host_rows_to_device(rows: list[list[int]], device: torch.device) -> torch.Tensor:
    """Rows of small integers as one int64 tensor on ``device``. To a GPU through pinned memory, asynchronously:
    ``torch.tensor(list, device="cuda")`` copies from pageable memory, which waits for the GPU's queued work."""
    host = torch.tensor(rows, dtype=torch.int64)
    if device.type != "cuda":
        return host.to(device)
    return host.pin_memory().to(device, non_blocking=True)
