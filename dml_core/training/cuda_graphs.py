"""``training.cuda_graphs``: the model's training forward and backward captured once as CUDA graphs and replayed at
every step (``torch.cuda.make_graphed_callables``), one launch each instead of one per op.

Why: a paper-scale step at batch 80-120 is bound by the host's kernel launches, not by the GPU (docs/gpu.md,
"Measured on a GPU"). The kernels and their order are eager's, so the numbers are meant to be eager's; the GPU
check's ``graphs`` part compares the two step by step. On the CPU the setting does nothing, as ``channels_last`` does.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Iterator
from contextlib import contextmanager

import torch
from torch import nn

from dml_core.errors import InputError
from dml_core.recipes.settings import Precision, TrainingSettings, forward_precision

Capture = Callable[[nn.Module, torch.Tensor], Callable[[torch.Tensor], tuple[torch.Tensor, ...]]]


def uses_cuda_graphs(settings: TrainingSettings, device: torch.device) -> bool:
    """Whether a run of ``settings`` on ``device`` replays graphs: CUDA and ``training.cuda_graphs``."""
    return device.type == "cuda" and settings.cuda_graphs


def check_cuda_graphs(recipe_id: str, settings: TrainingSettings, device: torch.device, world_size: int) -> None:
    """Refuse, before anything is built, a run that asks for graphs where they cannot be captured."""
    if uses_cuda_graphs(settings, device) and world_size > 1:
        raise InputError(
            f"recipe {recipe_id}: training.cuda_graphs: expected one process (DDP's hooks are not captured), "
            f"found {world_size}; set training.cuda_graphs=false for a distributed run"
        )


def _capture_graphs(module: nn.Module, images: torch.Tensor) -> Callable[[torch.Tensor], tuple[torch.Tensor, ...]]:
    return torch.cuda.make_graphed_callables(module, (images,))


class TupleOutput(nn.Module):
    """The model with its output as a tuple of tensors (what a graph can hand back), and how to rebuild the output:
    a tensor, or a dataclass of tensors (drml's ``RelationalOutput``)."""

    def __init__(self, model: nn.Module) -> None:
        super().__init__()
        self.model = model
        self.rebuild: Callable[[tuple[torch.Tensor, ...]], object] = lambda values: values[0]

    def forward(self, images: torch.Tensor) -> tuple[torch.Tensor, ...]:
        output = self.model(images)
        if isinstance(output, torch.Tensor):
            self.rebuild = lambda values: values[0]
            return (output,)
        if dataclasses.is_dataclass(output) and not isinstance(output, type):
            kind, names = type(output), [field.name for field in dataclasses.fields(output)]
            self.rebuild = lambda values: kind(**dict(zip(names, values, strict=True)))
            return tuple(getattr(output, name) for name in names)
        raise TypeError(
            "training.cuda_graphs: expected the model to return a tensor or a dataclass of tensors, "
            f"found {type(output).__name__}"
        )


@contextmanager
def _state_kept(model: nn.Module, device: torch.device) -> Iterator[None]:
    """Undo what the capture's warm-up passes do to the model's buffers (batch-norm statistics and counters) and to
    the random-number generators, in place: the graph keeps the buffers' storage."""
    buffers = [(buffer, buffer.detach().clone()) for buffer in model.buffers()]
    cpu_rng = torch.get_rng_state()
    device_rng = torch.cuda.get_rng_state(device) if device.type == "cuda" else None
    try:
        yield
    finally:
        with torch.no_grad():
            for buffer, kept in buffers:
                buffer.copy_(kept)
        torch.set_rng_state(cpu_rng)
        if device_rng is not None and not torch.equal(torch.cuda.get_rng_state(device), device_rng):
            torch.cuda.set_rng_state(device_rng, device)


def _layout(images: torch.Tensor) -> tuple:
    return tuple(images.shape), images.stride(), images.dtype, images.device


class GraphedForward:
    """The trainer's forward with ``training.cuda_graphs``: captures at the first training call, then replays for
    every batch of the captured layout; any other call runs ``model`` eagerly (``eager_calls`` counts the training
    ones). ``capture`` is ``make_graphed_callables`` (a test passes another).

    Only the model is captured: the loss, the optimiser and the schedule stay eager (losses with a host sync or a
    shape that depends on the data are common). It needs CUDA, one process (DDP's gradient hooks are not captured)
    and no ``torch.compile`` beside it (which has graphs of its own); a batch of another shape (an epoch's short last
    batch) and every call outside training (evaluation, no-grad) run eagerly.
    """

    def __init__(self, model: nn.Module, precision: Precision, capture: Capture = _capture_graphs) -> None:
        self.model, self.precision, self.capture = model, precision, capture
        self._replay: Callable[[torch.Tensor], object] | None = None
        self._captured_layout: tuple | None = None
        self.eager_calls = 0

    def __call__(self, images: torch.Tensor):
        if not (self.model.training and torch.is_grad_enabled()):
            return self.model(images)
        if self._replay is None:
            self._replay, self._captured_layout = self._captured(images), _layout(images)
        if _layout(images) != self._captured_layout:
            self.eager_calls += 1
            return self.model(images)
        return self._replay(images)

    def _captured(self, images: torch.Tensor) -> Callable[[torch.Tensor], object]:
        device = images.device
        flat = TupleOutput(self.model)
        bf16 = forward_precision(device.type, self.precision) == "bf16"
        # The step's own autocast, with the cast cache off (a capture refuses it; a forward uses each weight once).
        with (
            _state_kept(self.model, device),
            torch.autocast(device.type, dtype=torch.bfloat16, enabled=bf16, cache_enabled=False),
        ):
            graphed = self.capture(flat, images)

        def replay(batch: torch.Tensor):
            values = tuple(graphed(batch))  # first: the capture's forward is what tells ``flat`` the output's form
            return flat.rebuild(values)

        return replay


def training_forward(model: nn.Module, settings: TrainingSettings, device: torch.device):
    """What a training step calls for the forward: ``model`` (or what DDP wraps it in), compiled with
    ``training.compile``, graphed with ``training.cuda_graphs`` on CUDA (the trainer's and the benchmark's alike)."""
    if settings.compile:
        return torch.compile(model)
    if uses_cuda_graphs(settings, device):
        return GraphedForward(model, settings.precision)
    return model
