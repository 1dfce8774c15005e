"""Everything one training run needs, built from its recipe in one place — the trainer and the throughput
benchmark both call ``build_run``, so the benchmark measures exactly what the trainer runs."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

import numpy as np
import torch
from torch import nn

from dml_core.data import ImageDataset
from dml_core.data.registry import get_spec
from dml_core.models import EmbeddingModel
from dml_core.pipeline import build_batch_source
from dml_core.recipes.settings import Recipe
from dml_core.training import builders
from dml_core.training.distributed import SINGLE_PROCESS, Process, Sharding, use_global_batchnorm
from dml_core.training.optim import build_optimizer, build_scheduler


@dataclass
class RunParts:
    model: EmbeddingModel
    loss: nn.Module
    optimizer: torch.optim.Optimizer
    scheduler: torch.optim.lr_scheduler.LRScheduler
    sampler: object
    train_set: ImageDataset
    dense_labels: np.ndarray
    test_set: builders.TestSet
    validation_set: builders.TestSet | None  # the held-out training classes (``data.validation``); None: none
    batches: object  # LoaderBatches or CachedBatches
    sharding: Sharding  # this process's share of every batch (all of it with one process)
    batchnorm_statistics: str  # how BN batch statistics are computed (recorded in the results file)

    @property
    def iterations_per_epoch(self) -> int:
        return len(self.sampler)


def build_run(recipe: Recipe, root: Path, device: torch.device, process: Process = SINGLE_PROCESS) -> RunParts:
    """Model (seeded by the caller), data, sampler, loss on ``device``, optimiser, schedule and batch source
    (of ``process``'s share of every batch when training on several processes)."""
    dataset = get_spec(recipe.data.dataset)  # looked up once: the data steps below take the spec
    model = builders.build_model(recipe, root)
    train_set, dense_labels, test_set, validation_set = builders.build_datasets(recipe, dataset, model, root)
    sampler = builders.build_sampler(recipe, dense_labels)
    loss = builders.build_loss_for(
        recipe,
        int(dense_labels.max()) + 1,
        builders.embedding_dim_of(model, recipe),
        sampler.group_sizes,
        sampler.images_per_class,
    )
    sharding = Sharding(process, sampler.group_sizes)
    batchnorm_statistics = use_global_batchnorm(model, process, device)
    model.to(device)
    loss.to(device)
    if device.type == "cuda" and recipe.training.channels_last:
        model.to(memory_format=torch.channels_last)
    optimizer = build_optimizer(recipe.optimizer, model, loss, recipe.loss.lr_multiplier)
    scheduler = build_scheduler(recipe.schedule, optimizer, len(sampler))
    batches = build_batch_source(recipe, dataset, model, train_set, sampler, root, device, sharding.slots)
    return RunParts(
        model, loss, optimizer, scheduler, sampler, train_set, dense_labels, test_set, validation_set, batches,
        sharding, batchnorm_statistics,
    )  # fmt: skip
