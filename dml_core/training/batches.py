"""Where training batches come from: the PIL/DataLoader path (the reference, and the CPU path) or the
prepared-data path (decoded uint8 cache on the device, augmentation in batch there). Both yield the same
batches for the same (seed, epoch, batch) — see ``data.batch_augment``. ``slots``: this process's share of every
batch in multi-process training (``distributed.shard_slots``); None: the whole batch."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import torch
from torch.utils.data import DataLoader

from dml_core.data.batch_augment import BatchAugmentation
from dml_core.data.image_cache import ensure_generated_cache, load_cache
from dml_core.recipe import Recipe
from dml_core.training import builders
from dml_core.training.seeded_batches import EpochSlice, SeededDataset


class LoaderBatches:
    """Decode and augment in DataLoader workers, then copy to the device (pinned, asynchronous)."""

    def __init__(
        self, train_set, sampler, seed: int, num_workers: int, device: torch.device, slots: list[int] | None = None
    ) -> None:
        self.train_set, self.sampler, self.seed, self.slots = train_set, sampler, seed, slots
        self.num_workers, self.device = num_workers, device

    def epoch(self, epoch: int, start: int) -> Iterator[tuple[torch.Tensor, torch.Tensor]]:
        loader = DataLoader(
            SeededDataset(self.train_set),
            batch_sampler=EpochSlice(self.sampler, epoch, start, self.seed, self.slots),
            num_workers=self.num_workers,
            pin_memory=self.device.type == "cuda",
            persistent_workers=False,
        )
        for images, _, positions in loader:
            yield images.to(self.device, non_blocking=True), positions.to(self.device, non_blocking=True)


class CachedBatches:
    """Crop, flip and normalise cached uint8 images in batch on the device; no decoding, no workers."""

    def __init__(
        self, augmentation: BatchAugmentation, sampler, seed: int, device: torch.device, slots: list[int] | None = None
    ) -> None:
        self.augmentation, self.sampler, self.seed, self.device, self.slots = augmentation, sampler, seed, device, slots

    def epoch(self, epoch: int, start: int) -> Iterator[tuple[torch.Tensor, torch.Tensor]]:
        for keys in EpochSlice(self.sampler, epoch, start, self.seed, self.slots):
            positions = [position for position, _ in keys]
            images = self.augmentation(positions, [seed for _, seed in keys])
            yield images, torch.as_tensor(positions).to(self.device, non_blocking=True)


def build_batch_source(
    recipe: Recipe, model, train_set, sampler, root: Path, device: torch.device, slots: list[int] | None = None
):
    """The recipe's batch source: ``data.pipeline`` "pil" (DataLoader workers) or "cache" (device-side)."""
    settings = recipe.data
    if settings.pipeline == "pil":
        return LoaderBatches(train_set, sampler, recipe.training.seed, settings.num_workers, device, slots)
    config = builders.transform_config(recipe)
    ensure_generated_cache(settings.dataset, root, "train", config.resize_mode, config.resize)
    cache = load_cache(settings.dataset, root, "train", config.resize_mode, config.resize)
    return CachedBatches(
        BatchAugmentation(cache.to(device), model.input_spec, config), sampler, recipe.training.seed, device, slots
    )
