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
from torch.utils.data import Dataset

from dml_core.data.transforms import ToModelInput
from dml_core.errors import InputError
from dml_core.input_spec import InputSpec
from dml_core.pipeline.image_cache import ImageCache
from dml_core.recipes.settings import TransformSettings
from dml_core.seeding import seeded_cpu_rng

DRAW_FIELDS = ("position", "top", "left", "height", "width", "flip")


class CropDraws(Dataset):
    """Each image's crop box and flip, drawn from torch's global generator (``SeededDataset`` seeds it per sample):
    item ``position`` -> int64 ``DRAW_FIELDS``. A dataset of its own so that a DataLoader worker can draw the next
    batches while the training process trains (the time that saves it: docs/performance.md)."""

    def __init__(self, heights: list[int], widths: list[int], sampler, hflip: bool) -> None:
        self.heights, self.widths, self.sampler, self.hflip = heights, widths, sampler, hflip

    def __len__(self) -> int:
        return len(self.heights)

    def __getitem__(self, position: int) -> torch.Tensor:
        height, width = self.heights[position], self.widths[position]
        try:
            box = self.sampler.make_params([torch.empty(3, height, width, device="meta")])
        except ValueError as error:  # an image smaller than the crop
            raise InputError(f"image cache: {error}; use a larger resize or a smaller crop_size") from None
        flip = bool(self.hflip and torch.rand(1) < 0.5)
        row = [position, box["top"], box["left"], box["height"], box["width"], int(flip)]
        return torch.tensor(row, dtype=torch.int64)


class BatchAugmentation:
    """``(positions, seeds) -> (B, 3, crop, crop)`` float tensors in the backbone's convention: ``draws`` (each
    image's box and flip, on the host), then ``apply`` (the pixels, on the cache's device)."""

    def __init__(self, cache: ImageCache, input_spec: InputSpec, config: TransformSettings) -> None:
        self.cache = cache
        self.config = config
        self.crop = config.crop_size or input_spec.input_size
        # torchvision only where a transform is built: its import is heavy (its ops load torch._dynamo)
        from torchvision.transforms import v2

        if config.train_crop == "random_resized_crop":
            sampler = v2.RandomResizedCrop(self.crop, scale=config.rrc_scale, antialias=True)
        else:
            sampler = v2.RandomCrop(self.crop)
        self.to_model_input = ToModelInput(input_spec).to(cache.pixels.device)
        # Geometry on the host too: drawing boxes must not wait for the device.
        self.draws = CropDraws(cache.heights.cpu().tolist(), cache.widths.cpu().tolist(), sampler, config.hflip)
        self.offsets = cache.offsets.cpu().tolist()

    def draw(self, heights: list[int], widths: list[int], seeds: list[int]) -> tuple[list[dict], list[bool]]:
        """Each sample's crop box and flip, from torchvision's samplers under the sample's seed."""
        draws = CropDraws(heights, widths, self.draws.sampler, self.draws.hflip)
        rows = [self._drawn(draws, index, seed).tolist() for index, seed in enumerate(seeds)]
        boxes = [
            {"top": top, "left": left, "height": height, "width": width} for _, top, left, height, width, _ in rows
        ]
        return boxes, [bool(row[-1]) for row in rows]

    @staticmethod
    def _drawn(draws: CropDraws, position: int, seed: int) -> torch.Tensor:
        with seeded_cpu_rng(seed):
            return draws[position]

    def _image(self, position: int) -> torch.Tensor:
        start = int(self.offsets[position])
        height, width = self.draws.heights[position], self.draws.widths[position]
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
        rows = torch.stack([self._drawn(self.draws, p, s) for p, s in zip(positions, seeds, strict=True)])
        return self.apply(rows)

    def apply(self, drawn: torch.Tensor, on_device: torch.Tensor | None = None) -> torch.Tensor:
        """The batch of the host rows ``drawn`` (B x ``DRAW_FIELDS``); ``on_device``: the same rows already on the
        cache's device (copied asynchronously by whoever pinned them), else copied here."""
        device = self.cache.pixels.device
        # positions, crop corners and flips: one small tensor to the device per batch, copied without waiting for it
        keys = on_device if on_device is not None else host_rows_to_device(drawn, device)
        position, top, left, flip = (keys[:, DRAW_FIELDS.index(name)] for name in ("position", "top", "left", "flip"))
        if self.config.train_crop == "random_resized_crop":
            # torchvision only where a transform is built: its import is heavy (its ops load torch._dynamo)
            from torchvision.transforms import v2

            boxes = drawn.tolist()
            batch = torch.stack(
                [
                    v2.functional.resized_crop(
                        self._image(row[0]), row[1], row[2], row[3], row[4], [self.crop, self.crop], antialias=True
                    )
                    for row in boxes
                ]
            )
        else:
            batch = self._random_crops(position, top, left)
        if bool(drawn[:, DRAW_FIELDS.index("flip")].any()):
            batch = torch.where(flip.bool()[:, None, None, None], batch.flip(-1), batch)
        return self.to_model_input(batch)


def host_rows_to_device(rows: list[list[int]] | torch.Tensor, device: torch.device) -> torch.Tensor:
    """Rows of small integers (lists, or an int64 host tensor) as one int64 tensor on ``device``. To a GPU through
    pinned memory, asynchronously: ``torch.tensor(list, device="cuda")`` copies from pageable memory, which waits for
    the GPU's queued work (a DataLoader's batches come pinned already)."""
    host = rows if isinstance(rows, torch.Tensor) else torch.tensor(rows, dtype=torch.int64)
    if device.type != "cuda":
        return host.to(device)
    return (host if host.is_pinned() else host.pin_memory()).to(device, non_blocking=True)
