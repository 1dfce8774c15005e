"""Where training batches come from: the PIL/DataLoader path (the reference, and the CPU path) or the
prepared-data path (decoded uint8 cache on the device, augmentation in batch there), as ``data.pipeline`` says or
"auto" chooses (``choice``). For random crops both yield the same batches for the same (seed, epoch, batch) — see
``batch_augment``. ``slots``: this process's share of every batch in multi-process training
(``training.distributed.shard_slots``); None: the whole batch."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import numpy as np
import torch

from dml_core.data.registry import DatasetSpec
from dml_core.data.transforms import ToModelInput
from dml_core.data.validation_split import training_positions
from dml_core.pipeline.batch_augment import DRAW_FIELDS, BatchAugmentation, host_rows_to_device
from dml_core.pipeline.choice import AS_THE_RECIPE_SAYS, PipelineChoice, choose_pipeline, wants_cache
from dml_core.pipeline.image_cache import ImageCache, cache_problem, ensure_generated_cache, load_cache
from dml_core.pipeline.loaders import batch_to_model_input, kept_loader, loader_workers
from dml_core.pipeline.seeded_batches import EpochSlice, SeededDataset
from dml_core.recipes.settings import Recipe

# Drawing ~100 crop boxes takes a worker a few milliseconds a batch: one keeps ahead of any step.
DRAW_WORKERS = 1


class _KeptLoaderBatches:
    """One DataLoader over ``SeededDataset(dataset)`` for the whole run (``loaders.kept_loader``): its workers start
    once and serve every epoch, the epoch and start batch read from ``EpochSlice`` when each epoch begins (one epoch
    at a time: starting one ends the iteration of the one before); ``close`` lets them go."""

    def __init__(
        self,
        dataset,
        sampler,
        seed: int,
        num_workers: int,
        device: torch.device,
        slots: list[int] | None,
        pipeline: PipelineChoice,
    ) -> None:
        self.device, self.pipeline, self.num_workers = device, pipeline, num_workers
        self.batches = EpochSlice(sampler, 0, 0, seed, slots)
        self.loader = kept_loader(
            SeededDataset(dataset), batch_sampler=self.batches, num_workers=num_workers, device=device
        )

    def _loaded(self, epoch: int, start: int) -> Iterator:
        self.batches.epoch, self.batches.start = epoch, start  # read when the loader's iteration begins
        yield from self.loader

    def close(self) -> None:
        """Stop the workers, if any (they go with the loader's last reference)."""
        self.loader = None


class LoaderBatches(_KeptLoaderBatches):
    """Decode, resize, crop and flip in DataLoader workers (``train_set`` gives uint8 images:
    ``build_pixel_transform``), copy the uint8 batch to the device (pinned, asynchronous) and convert it there
    (``to_model_input``: ``ToModelInput`` on the device; None: the images are the model's input already)."""

    def __init__(
        self,
        train_set,
        sampler,
        seed: int,
        num_workers: int,
        device: torch.device,
        slots: list[int] | None = None,
        pipeline: PipelineChoice = AS_THE_RECIPE_SAYS["pil"],
        to_model_input: ToModelInput | None = None,
    ) -> None:
        super().__init__(train_set, sampler, seed, num_workers, device, slots, pipeline)
        self.model_input = batch_to_model_input(device, to_model_input)

    def epoch(self, epoch: int, start: int) -> Iterator[tuple[torch.Tensor, torch.Tensor]]:
        for images, _, positions in self._loaded(epoch, start):
            yield self.model_input(images), positions.to(self.device, non_blocking=True)


class CachedBatches(_KeptLoaderBatches):
    """Crop, flip and normalise cached uint8 images in batch on the device, no decoding. Each batch's crop boxes
    and flips (``CropDraws``) are drawn in a DataLoader worker where there is one (``num_workers``: at most
    ``DRAW_WORKERS``), so the training process only receives them, pinned, and copies them without waiting; with
    none, in this process. The same draws either way (each sample's seed)."""

    def __init__(
        self,
        augmentation: BatchAugmentation,
        sampler,
        seed: int,
        device: torch.device,
        slots: list[int] | None = None,
        pipeline: PipelineChoice = AS_THE_RECIPE_SAYS["cache"],
        num_workers: int = 0,
    ) -> None:
        self.augmentation = augmentation
        super().__init__(augmentation.draws, sampler, seed, min(num_workers, DRAW_WORKERS), device, slots, pipeline)

    def epoch(self, epoch: int, start: int) -> Iterator[tuple[torch.Tensor, torch.Tensor]]:
        for drawn in self._loaded(epoch, start):
            keys = host_rows_to_device(drawn, self.device)
            yield self.augmentation.apply(drawn, keys), keys[:, DRAW_FIELDS.index("position")]


def build_batch_source(
    recipe: Recipe,
    dataset: DatasetSpec,
    model,
    train_set,
    sampler,
    root: Path,
    device: torch.device,
    slots: list[int] | None = None,
):
    """The recipe's batch source: "pil" (DataLoader workers) or "cache" (device-side, from ``dataset``'s cache), as
    ``data.pipeline`` says or, for "auto", as ``pipeline_for_run`` chooses; its ``pipeline`` says which and why."""
    choice, cache = pipeline_for_run(recipe, dataset, root, device.type, device_memory(device))
    if choice.pipeline == "pil":
        workers = loader_workers(recipe.data.num_workers)
        to_model_input = ToModelInput(model.input_spec)
        return LoaderBatches(train_set, sampler, recipe.training.seed, workers, device, slots, choice, to_model_input)
    config = recipe.data.transforms
    if cache is None:  # set so by the recipe, and missing: refused, saying what to run
        cache = load_cache(dataset, root, "train", config.resize_mode, config.resize)
    if recipe.data.validation is not None:  # the sampler's positions count the classes not held out only
        cache = _cache_rows(cache, training_positions(cache.labels, recipe.data.validation))
    augmentation = BatchAugmentation(cache.to(device), model.input_spec, config)
    workers = loader_workers(recipe.data.num_workers)
    return CachedBatches(augmentation, sampler, recipe.training.seed, device, slots, choice, workers)


def _cache_rows(cache: ImageCache, positions: np.ndarray) -> ImageCache:
    """The cache's images at ``positions``, in that order (the pixels stay; their offsets are picked)."""
    rows = torch.as_tensor(positions)
    geometry = (cache.offsets[rows], cache.heights[rows], cache.widths[rows])
    return ImageCache(cache.pixels, *geometry, cache.labels[positions])


def pipeline_for_run(
    recipe: Recipe, dataset: DatasetSpec, root: Path, device_type: str, device_bytes: int | None
) -> tuple[PipelineChoice, ImageCache | None]:
    """The run's pipeline (``choice``) and, where it would take the cache and a current one of
    ``dataset`` is there, the cache (memory-mapped, on the host). A generated set's cache is built first."""
    settings = recipe.data
    if not wants_cache(settings, device_type):
        return choose_pipeline(settings, device_type, None, 0, device_bytes), None
    config = recipe.data.transforms
    ensure_generated_cache(dataset, root, "train", config.resize_mode, config.resize)
    problem = cache_problem(dataset, root, "train", config.resize_mode, config.resize)
    cache = None if problem else load_cache(dataset, root, "train", config.resize_mode, config.resize)
    choice = choose_pipeline(settings, device_type, problem, len(cache.pixels) if cache else 0, device_bytes)
    return choice, cache if choice.pipeline == "cache" else None


def device_memory(device: torch.device) -> int | None:
    """The GPU's memory in bytes; None off CUDA."""
    return torch.cuda.get_device_properties(device).total_memory if device.type == "cuda" else None
