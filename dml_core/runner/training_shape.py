"""What sets a run's time, read from its recipe without its data: the training shape that sets a step's cost (model,
images per step, crop, the forward's precision, data pipeline, loss), the model's forward FLOPs per image, and the
run's length (steps and evaluations). The batch and an epoch's steps come from the recipe's own sampler laid over the
training split's published image and class counts, the images spread evenly over the classes: exact for the batch,
an estimate of an epoch's steps (the real classes are uneven)."""

from __future__ import annotations

from dataclasses import asdict, dataclass, fields
from functools import cache

import numpy as np
import torch
from torch.utils.flop_counter import FlopCounterMode

from dml_core.data.registry import get_spec
from dml_core.data.validation_split import training_positions
from dml_core.errors import InputError
from dml_core.models import build_backbone
from dml_core.pipeline.choice import wants_cache
from dml_core.recipes.settings import Recipe, forward_precision
from dml_core.runner.disk_needs import evaluated_images
from dml_core.training.builders import build_sampler


@dataclass(frozen=True)
class TrainingShape:
    """What a training step's cost depends on: timed once per shape, and what a measurement must share to serve a
    run as it is."""

    backbone: str
    width: float  # the backbone's width (1: as published; the mini tier narrows it)
    head: str
    batch: int  # images per step
    crop: int  # the side of the square images the model takes, in pixels
    precision: str  # of the training forward on the device (fp32 on the CPU whatever the recipe says)
    pipeline: str  # "cache" (the uint8 cache augmented on the device) or "pil" (decoded in loader workers)
    loss: str

    def text(self) -> str:
        """The shape in words.

        >>> TrainingShape("googlenet", 1.0, "linear", 120, 227, "fp32", "cache", "damlrrm").text()
        'googlenet/linear, 120 x 227 px a step, fp32, cache pipeline, loss damlrrm'
        """
        width = "" if self.width == 1 else f" x{self.width:g}"
        return (
            f"{self.backbone}{width}/{self.head}, {self.batch} x {self.crop} px a step, {self.precision}, "
            f"{self.pipeline} pipeline, loss {self.loss}"
        )

    def flops_per_step(self) -> float:
        """The backbone's forward FLOPs per image times the images of a step."""
        return _backbone_flops(self.backbone, self.width, self.crop) * self.batch

    def record(self) -> dict:
        """The shape as a measurement file records it."""
        return asdict(self)

    @classmethod
    def from_record(cls, record: object) -> TrainingShape | None:
        """The shape a measurement file recorded; None where it recorded none or not all of it."""
        names = [field.name for field in fields(cls)]
        if not isinstance(record, dict) or any(name not in record for name in names):
            return None
        try:
            return cls(**{name: record[name] for name in names})
        except TypeError:
            return None


def crop_size(recipe: Recipe) -> int:
    """The side of the images the model trains on: the recipe's crop, else its backbone's input size."""
    settings = recipe.model
    return recipe.data.transforms.crop_size or _meta_backbone(settings.backbone, settings.width).input_spec.input_size


@cache
def _meta_backbone(name: str, width: float):
    with torch.device("meta"):
        return build_backbone(name, weights="random", width=width)


@cache
def _backbone_flops(name: str, width: float, crop: int) -> float:
    """The backbone's training forward's floating-point operations per image at ``crop`` (torch's FlopCounterMode
    on the meta device; a multiply-add counts two). A head's few are left out."""
    backbone = _meta_backbone(name, width)
    backbone.train()
    with FlopCounterMode(display=False) as counter, torch.device("meta"):
        backbone(torch.zeros(2, 3, crop, crop))
    return counter.get_total_flops() / 2


def estimated_labels(recipe: Recipe) -> np.ndarray:
    """The training labels as the split's published counts give them, the images spread evenly over the classes,
    less the classes held out for validation (``data.validation``)."""
    counts = get_spec(recipe.data.dataset).splits["train"]
    labels = np.sort(np.arange(counts.images) % (counts.classes or 1))
    return labels[training_positions(labels, recipe.data.validation)]


# The classes a stand-in label set keeps for reading a sampler's batch: enough for every sampler's batch, few
# enough that laying it out takes milliseconds (an epoch of SOP's 11,318 classes takes seconds).
_STAND_IN_CLASSES = 200
_BATCHES: dict[tuple, int] = {}
_EPOCHS: dict[tuple, int] = {}


def _sampler_key(recipe: Recipe) -> tuple:
    validation = recipe.data.validation.model_dump_json() if recipe.data.validation else ""
    sampler = recipe.sampler
    return recipe.data.dataset, validation, sampler.name, repr(sorted(sampler.params.items())), recipe.training.seed


def stand_in_labels(recipe: Recipe) -> np.ndarray:
    """The first classes of ``estimated_labels``: a sampler laid over them makes batches of the recipe's shape."""
    labels = estimated_labels(recipe)
    return labels[labels < _STAND_IN_CLASSES]


def images_per_step(recipe: Recipe) -> int:
    """The images of one step of the recipe's sampler (over ``stand_in_labels``; ``InputError`` where it cannot
    be laid over them)."""
    key = _sampler_key(recipe)
    if key not in _BATCHES:
        _BATCHES[key] = sum(build_sampler(recipe, stand_in_labels(recipe)).group_sizes)
    return _BATCHES[key]


def steps_per_epoch(recipe: Recipe) -> int:
    """The steps of one epoch of the recipe's sampler over ``estimated_labels``: an estimate (the real classes are
    uneven)."""
    key = _sampler_key(recipe)
    if key not in _EPOCHS:
        _EPOCHS[key] = len(build_sampler(recipe, estimated_labels(recipe)))
    return _EPOCHS[key]


def training_shape(recipe: Recipe, device_type: str) -> TrainingShape:
    """The shape of ``recipe``'s step on a device of ``device_type`` ("cuda", "cpu")."""
    settings = recipe.model
    return TrainingShape(
        backbone=settings.backbone,
        width=settings.width,
        head=settings.head.name,
        batch=images_per_step(recipe),
        crop=crop_size(recipe),
        precision=forward_precision(device_type, recipe.training.precision),
        pipeline="cache" if wants_cache(recipe.data, device_type) else "pil",
        loss=recipe.loss.name,
    )


@dataclass(frozen=True)
class RunLength:
    """The steps a run trains, its evaluations and the images each embeds."""

    steps: int
    evaluations: int
    evaluated_images: int
    epochs: int | None = None  # counted in epochs: how many (their steps estimated, ``sampler_layout``)

    def text(self) -> str:
        """The steps in words.

        >>> RunLength(2400, 21, 5924, epochs=20).text()
        "2,400 iterations (20 epochs, estimated from the split's counts)"
        """
        epochs = f" ({self.epochs} epochs, estimated from the split's counts)" if self.epochs else ""
        return f"{self.steps:,} iterations{epochs}"


def run_length(recipe: Recipe, max_steps: int | None = None) -> RunLength:
    """The steps and evaluations of one run of ``recipe`` (a rehearsal: its first ``max_steps``), as the trainer
    counts them: every ``eval_every`` (in the run's unit) and at the end, and before the first step where asked."""
    settings = recipe.training
    per_epoch = steps_per_epoch(recipe) if settings.epochs else 1
    whole = settings.iterations or settings.epochs * per_epoch
    steps = min(whole, max_steps) if max_steps else whole
    every = settings.eval_every * per_epoch
    evaluations = steps // every + (1 if steps % every else 0) + (1 if settings.evaluate_at_start else 0)
    spec = get_spec(recipe.data.dataset)
    held_out = spec.splits["train"].images - len(estimated_labels(recipe)) if recipe.data.validation else 0
    return RunLength(steps, evaluations, evaluated_images(spec) + held_out, settings.epochs)


def layout_problem(recipe: Recipe) -> str | None:
    """Why the recipe's sampler cannot be laid over the estimated labels; None where it can."""
    try:
        images_per_step(recipe)
    except InputError as error:
        return str(error)
    return None
