"""The ``overhead`` part: what each host-side setting costs damlrrm's step on the GPU, so that the next default is
chosen from measurements.

damlrrm's step is bound by the host's launches, not the device (docs/gpu.md), so this part times the backbone bound
(the recipe's model, batch, optimiser and schedule on one batch already on the device, the mean of the outputs as
the loss) as the recipe runs it and with one setting changed at a time (``VARIANTS``), each alone, from the same
weights. Only the ``recipe`` figure is required: a variant that cannot run is reported with its error.
"""

from __future__ import annotations

import copy
import dataclasses
import time
from collections.abc import Callable, Iterator
from contextlib import closing, contextmanager

import torch

from dml_core.gpu_check.part import CheckContext, Outcome, PartFailed
from dml_core.recipes import load_recipe
from dml_core.training.cuda_graphs import GraphedForward
from dml_core.training.determinism import run_determinism
from dml_core.training.setup import build_run
from dml_core.training.step import train_step

RUN = "damlrrm/ours-cub200"
WARMUP_STEPS, TIMED_STEPS = 10, 60
# recipe: as the recipe sets precision, channels_last and determinism; deterministic_off: cuDNN's and cuBLAS's free
# algorithm choice; bf16: the model under bf16 autocast; contiguous: NCHW instead of channels_last; cuda_graphs: the
# model's forward and backward captured once and replayed, as ``training.cuda_graphs`` does (loss and optimiser eager).
VARIANTS = ("recipe", "deterministic_off", "bf16", "contiguous", "cuda_graphs")


def mean_of_outputs(output, labels: torch.Tensor) -> torch.Tensor:
    """The backbone bound's loss: the mean of every floating output (the embedding; drml's individual features and
    reconstruction errors too), so that the backward reaches every layer the real loss trains, at the cost of a
    reduction or three. ``labels`` unused.

    >>> float(mean_of_outputs(torch.tensor([1.0, 3.0]), torch.tensor([0, 1])))
    2.0
    """
    if isinstance(output, torch.Tensor):
        return output.mean()
    fields = [getattr(output, field.name) for field in dataclasses.fields(output)]
    return torch.stack([tensor.mean() for tensor in fields if tensor.is_floating_point()]).sum()


def bound_recipe(run: str, dataset: str = "embedded"):
    """The run's recipe at paper scale on ``dataset`` (the generated glyphs: no download), with random weights."""
    recipe = load_recipe(run)
    data = recipe.data.model_copy(update={"dataset": dataset})
    return recipe.model_copy(update={"data": data, "model": recipe.model.model_copy(update={"weights": "random"})})


def _synchronize(device: torch.device) -> None:
    if device.type == "cuda":
        torch.cuda.synchronize(device)


def iterations_per_second(step: Callable[[], object], device: torch.device, warmup: int, timed: int) -> float:
    for _ in range(warmup):
        step()
    _synchronize(device)
    started = time.perf_counter()
    for _ in range(timed):
        step()
    _synchronize(device)
    return timed / (time.perf_counter() - started)


@contextmanager
def _variant(name: str, parts, images: torch.Tensor, settings, device: torch.device) -> Iterator[tuple]:
    """(forward, images, training settings) of one variant, under its determinism settings; the model's memory
    format is restored after."""
    deterministic = settings.deterministic and name != "deterministic_off"
    with run_determinism(device, deterministic):
        if name == "bf16":
            yield parts.model, images, settings.model_copy(update={"precision": "bf16"})
        elif name == "contiguous":
            parts.model.to(memory_format=torch.contiguous_format)
            try:
                yield parts.model, images.contiguous(), settings.model_copy(update={"channels_last": False})
            finally:
                if device.type == "cuda" and settings.channels_last:
                    parts.model.to(memory_format=torch.channels_last)
        elif name == "cuda_graphs":
            if device.type != "cuda":
                raise RuntimeError("CUDA graphs need a CUDA device")
            # the trainer's own graphed forward (it captures at the first step, one of the warm-up steps)
            graphed = GraphedForward(parts.model, settings.precision)
            yield graphed, images, settings.model_copy(update={"cuda_graphs": True})
        else:
            yield parts.model, images, settings


@dataclasses.dataclass
class OneBatchRun:
    """A run built for timing its step on one batch already on the device, and its state at the start (model, loss,
    optimiser, schedule), so that each variant starts from the same place."""

    parts: object
    images: torch.Tensor
    labels: torch.Tensor
    start: dict = dataclasses.field(default_factory=dict)
    spare: tuple[torch.Tensor, torch.Tensor] | None = None  # the batch source's second batch (images, labels)

    @classmethod
    def build(cls, recipe, context: CheckContext, spare_batch: bool = False) -> OneBatchRun:
        torch.manual_seed(0)
        parts = build_run(recipe, context.data_root, context.device)
        with closing(parts.batches.epoch(0, 0)) as batches:
            loaded = iter(batches)
            first = next(loaded)
            second = next(loaded, None) if spare_batch else None
        parts.batches.close()
        if spare_batch and second is None:
            raise PartFailed(f"{recipe.id}: its first epoch holds one batch, and a second one was asked for")
        dense_labels = torch.as_tensor(parts.dense_labels).to(context.device)
        run = cls(parts, first[0], dense_labels[first[1]])
        if second is not None:
            run.spare = (second[0], dense_labels[second[1]])
        run.start = {name: copy.deepcopy(getattr(parts, name).state_dict()) for name in _STATEFUL}
        return run

    def restart(self) -> None:
        """Back to the start: every state as built, the model in training mode, the random numbers reseeded."""
        for name in _STATEFUL:
            getattr(self.parts, name).load_state_dict(self.start[name])
        self.parts.model.train()
        torch.manual_seed(1)

    def step(
        self, forward, loss_fn, settings, images: torch.Tensor | None = None, labels: torch.Tensor | None = None
    ) -> None:
        """One training step on the batch (or on ``images``: the same batch in another layout, or with ``labels``
        another batch)."""
        images = self.images if images is None else images
        labels = self.labels if labels is None else labels
        train_step(forward, loss_fn, self.parts.optimizer, self.parts.scheduler, images, labels, settings)


_STATEFUL = ("model", "loss", "optimizer", "scheduler")


def measure_variants(
    recipe, context: CheckContext, variants=VARIANTS, warmup: int = WARMUP_STEPS, timed: int = TIMED_STEPS
) -> dict:
    """Each variant's it/s (or its error) and ratio to ``recipe``, from one batch of the run's own batch source."""
    device = context.device
    run = OneBatchRun.build(recipe, context)
    figures: dict[str, dict] = {}
    for name in variants:
        done = {"run": recipe.id, "variants": figures}
        context.stop_if_out_of_time(f"{len(figures)} of {len(variants)} variants", done)
        run.restart()
        try:
            with _variant(name, run.parts, run.images, recipe.training, device) as (forward, batch, settings):

                def step(forward=forward, batch=batch, settings=settings):
                    run.step(forward, mean_of_outputs, settings, batch)

                figures[name] = {"iterations_per_second": iterations_per_second(step, device, warmup, timed)}
        except Exception as error:  # a variant that cannot run is a figure, not the part's failure
            figures[name] = {"error": f"{type(error).__name__}: {error}"}
    reference = figures.get("recipe", {}).get("iterations_per_second")
    for figure in figures.values():
        if reference and "iterations_per_second" in figure:
            figure["ratio_to_recipe"] = figure["iterations_per_second"] / reference
    batch = len(run.images)
    return {"run": recipe.id, "batch": batch, "warmup_steps": warmup, "timed_steps": timed, "variants": figures}


def run_overhead(context: CheckContext) -> Outcome:
    figures = measure_variants(bound_recipe(RUN), context)
    variants = figures["variants"]
    if "iterations_per_second" not in variants["recipe"]:
        raise PartFailed(f"the recipe's own step did not run: {variants['recipe']['error']}", figures)
    summary = ", ".join(
        f"{name} {figure['iterations_per_second']:.1f}" if "iterations_per_second" in figure else f"{name} failed"
        for name, figure in variants.items()
    )
    return Outcome(f"{RUN} backbone bound, it/s: {summary}", figures)
