"""One optimisation step, shared by the trainer and the throughput benchmark (so the benchmark's model-only
bound measures exactly the work the trainer does per batch)."""

from __future__ import annotations

import dataclasses
from contextlib import nullcontext

import torch
from torch.nn.utils import clip_grad_norm_

from dml_core.recipes.settings import Precision, TrainingSettings, forward_precision
from dml_core.training.distributed import Sharding


def autocast(device: torch.device, precision: Precision):
    """The training forward's autocast: bf16 where ``forward_precision`` says so (CUDA, ``training.precision``),
    none otherwise: CPU runs stay fp32 (and deterministic). Evaluation embeds in fp32 always
    (``evaluation.TestSetEmbedder``)."""
    if forward_precision(device.type, precision) == "bf16":
        return torch.autocast("cuda", dtype=torch.bfloat16)
    return nullcontext()


def fp32(output):
    """The model's output with floating tensors in fp32, so losses never run in bf16."""
    if isinstance(output, torch.Tensor):
        return output.float() if output.is_floating_point() else output
    if dataclasses.is_dataclass(output):
        fields = {field.name: fp32(getattr(output, field.name)) for field in dataclasses.fields(output)}
        return dataclasses.replace(output, **fields)
    return output


def optimised_parameters(optimizer: torch.optim.Optimizer) -> list[torch.Tensor]:
    """Every parameter the optimiser steps, in its groups' order."""
    return [parameter for group in optimizer.param_groups for parameter in group["params"]]


def train_step(
    forward,
    loss_fn,
    optimizer,
    scheduler,
    images: torch.Tensor,
    labels: torch.Tensor,
    settings: TrainingSettings,
    sharding: Sharding | None = None,
) -> torch.Tensor:
    """Forward (bf16 autocast on CUDA if asked), fp32 loss, backward, gradient clipping if asked (the total norm
    of every parameter the optimiser steps, model and loss alike, at most ``settings.grad_clip_norm``),
    optimiser and schedule step.

    With ``sharding`` over several processes, ``images``/``labels`` are this process's share and the loss runs
    on the gathered global batch (see ``distributed``). Returns the loss tensor without reading it (no host
    synchronisation)."""
    device = images.device
    if device.type == "cuda" and settings.channels_last:
        images = images.contiguous(memory_format=torch.channels_last)
    with autocast(device, settings.precision):
        output = forward(images)
    output = fp32(output)
    if sharding is not None:
        output, labels = sharding.gather(output, labels)
    loss = loss_fn(output, labels)
    optimizer.zero_grad(set_to_none=True)
    loss.backward()
    if sharding is not None:
        sharding.process.average_gradients(loss_fn.parameters())
    if settings.grad_clip_norm is not None:
        # after the averaging, so every process clips the same gradients; no host read (the norm stays on device)
        clip_grad_norm_(optimised_parameters(optimizer), settings.grad_clip_norm)
    optimizer.step()
    scheduler.step()
    return loss
