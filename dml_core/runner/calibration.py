"""Timing the runs' training shapes here, before the first run: per distinct shape (``training_shape``), a few dozen
steps of a run's own model, loss, optimiser and determinism settings on synthetic batches (random uint8 images of
the crop's size made on the device and converted there, the labels of the sampler's first batch), then a few batches
of its evaluation's embedding pass. The model starts from random weights: a step costs the same. The data pipeline
(decoding, crops, loader workers) is not timed, nor an evaluation's metrics (kNN, k-means)."""

from __future__ import annotations

import gc
from collections.abc import Iterable
from dataclasses import dataclass

import torch

from dml_core.data.transforms import ToModelInput
from dml_core.errors import InputError
from dml_core.recipes.settings import Recipe
from dml_core.runner.training_shape import (
    TrainingShape,
    crop_size,
    estimated_labels,
    layout_problem,
    stand_in_labels,
    training_shape,
)
from dml_core.training import builders
from dml_core.training.clock import DeviceClock
from dml_core.training.cuda_graphs import training_forward
from dml_core.training.determinism import run_determinism
from dml_core.training.optim import build_optimizer, build_scheduler
from dml_core.training.step import train_step

# (warm-up, timed) steps and (warm-up, timed) evaluation batches per device type: a few dozen steps on a GPU, where
# each takes tens of milliseconds; a few on the CPU, where a full-scale step takes seconds.
STEPS = {"cuda": (5, 30), "cpu": (1, 4)}
EVALUATION_BATCHES = {"cuda": (1, 3), "cpu": (1, 1)}


@dataclass(frozen=True)
class Calibration:
    """A shape's time measured here: seconds a training step and seconds an evaluated image."""

    seconds_per_step: float
    seconds_per_evaluated_image: float
    steps: int  # timed
    device: str

    def text(self) -> str:
        """The paces in words.

        >>> Calibration(0.0369, 0.0005, 30, "NVIDIA H200").text()
        '27.1 it/s, evaluation 2,000 images/s (30 steps on NVIDIA H200)'
        """
        return (
            f"{1 / self.seconds_per_step:.1f} it/s, evaluation {1 / self.seconds_per_evaluated_image:,.0f} images/s "
            f"({self.steps} steps on {self.device})"
        )


def calibrate_shapes(
    recipes: Iterable[Recipe], device: torch.device, device_name: str, clock: DeviceClock | None = None
) -> tuple[dict[TrainingShape, Calibration], dict[TrainingShape, str]]:
    """One calibration per distinct training shape of ``recipes`` on ``device``, each timed with the first recipe
    of that shape; and each shape that could not be timed, with why (the plan goes on without it)."""
    firsts: dict[TrainingShape, Recipe] = {}
    for recipe in recipes:
        if layout_problem(recipe) is None:
            firsts.setdefault(training_shape(recipe, device.type), recipe)
    timed, failed = {}, {}
    for shape, recipe in firsts.items():
        try:
            timed[shape] = calibrate(recipe, device, device_name, clock)
        except (RuntimeError, ValueError, InputError) as error:  # out of memory, a loss refusing the batch
            failed[shape] = (
                f"{type(error).__name__}: {str(error).strip().splitlines()[0] if str(error).strip() else ''}"
            )
            if device.type == "cuda":
                torch.cuda.empty_cache()
    return timed, failed


def calibrate(recipe: Recipe, device: torch.device, device_name: str, clock: DeviceClock | None = None) -> Calibration:
    """Time ``recipe``'s training step and evaluation pass on ``device`` (``clock``: read before and after each
    timed block, waiting for the device; a test passes a fake one)."""
    with run_determinism(device, recipe.training.deterministic):
        step_seconds, image_seconds = _seconds(recipe, device, clock or DeviceClock(device))
    gc.collect()  # the model and optimiser of the timing, gone with its frame
    if device.type == "cuda":
        torch.cuda.empty_cache()  # the runs that follow get the memory back
    return Calibration(step_seconds, image_seconds, STEPS.get(device.type, STEPS["cuda"])[1], device_name)


def _seconds(recipe: Recipe, device: torch.device, clock: DeviceClock) -> tuple[float, float]:
    """Seconds a training step and seconds an evaluated image of ``recipe`` on ``device``."""
    warmup, timed = STEPS.get(device.type, STEPS["cuda"])
    eval_warmup, eval_timed = EVALUATION_BATCHES.get(device.type, EVALUATION_BATCHES["cuda"])
    generator = torch.Generator(device=device).manual_seed(0)
    model, loss, optimizer, scheduler, labels = _parts(recipe, device)
    to_input = ToModelInput(model.input_spec).to(device)
    crop = crop_size(recipe)
    images = _images(len(labels), crop, device, generator)
    forward = training_forward(model, recipe.training, device)

    def step() -> None:
        train_step(forward, loss, optimizer, scheduler, to_input(images), labels, recipe.training)

    step_seconds = _timed(step, warmup, timed, clock)
    model.eval()
    batch = _images(recipe.training.eval_batch_size, crop, device, generator)

    def embed() -> None:
        with torch.no_grad():
            model.embed(to_input(batch)).float().cpu()

    return step_seconds, _timed(embed, eval_warmup, eval_timed, clock) / len(batch)


def _timed(call, warmup: int, timed: int, clock: DeviceClock) -> float:
    """Seconds per call of ``call``, over ``timed`` calls after ``warmup`` untimed ones."""
    for _ in range(warmup):
        call()
    start = clock.now()
    for _ in range(timed):
        call()
    return (clock.now() - start) / timed


def _images(count: int, crop: int, device: torch.device, generator: torch.Generator) -> torch.Tensor:
    return torch.randint(0, 256, (count, 3, crop, crop), dtype=torch.uint8, device=device, generator=generator)


def _parts(recipe: Recipe, device: torch.device):
    """The run's model (random weights), loss (as many classes as its split has), optimiser and schedule on
    ``device``, and the labels of its sampler's first batch over the split's first classes."""
    labels = stand_in_labels(recipe)
    sampler = builders.build_sampler(recipe, labels)
    first = next(iter(sampler))
    random_start = recipe.model.model_copy(update={"weights": "random"})
    model = builders.build_model(recipe.model_copy(update={"model": random_start}))
    loss = builders.build_loss_for(
        recipe,
        int(estimated_labels(recipe).max()) + 1,
        builders.embedding_dim_of(model, recipe),
        sampler.group_sizes,
        sampler.images_per_class,
    )
    model.to(device).train()
    loss.to(device)
    if device.type == "cuda" and recipe.training.channels_last:
        model.to(memory_format=torch.channels_last)
    optimizer = build_optimizer(recipe.optimizer, model, loss, recipe.loss.lr_multiplier)
    scheduler = build_scheduler(recipe.schedule, optimizer, len(sampler))
    return model, loss, optimizer, scheduler, torch.as_tensor(labels[first], device=device)
