"""Each paper's loss: the aten ops one training step dispatches (forward and backward), counted on the CPU.

Why a count: on a GPU every dispatched op is at least one kernel launch, microseconds of host time whatever its
size, so a loss of 1,500 small ops a step is bound by launches alone (damlrrm's Prim loop over the whole neat
stream, issue 35). Unlike a timing, a count is the same on any CPU: the gate holds each loss to its budget
(``test_loss_ops.py``) and the training benchmark reports the counts.

The batch is the paper's main recipe's, at the paper's shape or the smoke version's: the recipe's sampler on a
split shaped like CUB-200's training half (100 classes, 60 images each), the recipe's model (random weights) on
random images, its output turned into leaves so that the count covers the loss alone. The second step is counted:
a loss may set itself up on its first.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Sequence

import numpy as np
import torch
from torch.utils._python_dispatch import TorchDispatchMode

from dml_core.recipes import load_recipe, smoke_version
from dml_core.recipes.mini import main_runs
from dml_core.training import builders

MAIN_RECIPES = main_runs()  # each paper's main run id (`main` of reproduce/<key>/mini.yaml)
SHAPES = ("paper", "smoke")
SPLIT_CLASSES, IMAGES_PER_SPLIT_CLASS = 100, 60
IMAGE_SIZE = 32  # the smallest the smoke versions use: the output's shape does not depend on it

# Ops per step at the paper's shape, at most. Each is the count measured when it was set (damlrrm 246, anml 180,
# gpw 97, drml 339, cgml 250 with torch 2.15) plus about a tenth, for torch versions that decompose an op
# differently; a regression of the kind these catch (a loop over samples or classes) multiplies the count.
# damlrrm's is the target (it dispatched 1,561 when its Prim loop ran over all 60 neat samples).
BUDGETS = {"damlrrm": 300, "anml": 200, "gpw": 110, "drml": 375, "cgml": 275}


class DispatchedOps(TorchDispatchMode):
    """``with DispatchedOps() as ops:``; then ``ops.count`` is the number of aten op calls made inside, backward
    included (the autograd engine dispatches the backward's ops through the same modes)."""

    def __init__(self) -> None:
        super().__init__()
        self.count = 0

    def __torch_dispatch__(self, func, types, args=(), kwargs=None):
        self.count += 1
        return func(*args, **(kwargs or {}))


def main_recipe(paper: str, shape: str, overrides: Sequence[str] = ()):
    """The paper's main recipe at ``shape`` ("paper" or "smoke") under ``overrides`` (``--set``), with random
    weights (no download)."""
    recipe = load_recipe(f"{paper}/{MAIN_RECIPES[paper]}", overrides)
    if shape == "smoke":
        recipe = smoke_version(recipe)
    return recipe.model_copy(update={"model": recipe.model.model_copy(update={"weights": "random"})})


def as_leaves(output):
    """The model's output (a tensor or a dataclass of tensors) as fresh leaves that collect gradients."""
    if isinstance(output, torch.Tensor):
        return output.detach().clone().requires_grad_(output.is_floating_point())
    fields = {field.name: as_leaves(getattr(output, field.name)) for field in dataclasses.fields(output)}
    return dataclasses.replace(output, **fields)


def loss_and_batch(recipe):
    """The recipe's loss as the trainer builds it, the model's output on one batch of its sampler, and the labels."""
    labels = np.repeat(np.arange(SPLIT_CLASSES), IMAGES_PER_SPLIT_CLASS)
    sampler = builders.build_sampler(recipe, labels)
    positions = next(iter(sampler))
    torch.manual_seed(0)
    model = builders.build_model(recipe)
    loss = builders.build_loss_for(
        recipe, SPLIT_CLASSES, builders.embedding_dim_of(model, recipe), sampler.group_sizes, sampler.images_per_class
    )
    model.eval()
    with torch.no_grad():
        output = model(torch.randn(len(positions), 3, IMAGE_SIZE, IMAGE_SIZE))
    return loss, output, torch.as_tensor(labels[positions])


def loss_ops_per_step(paper: str, shape: str = "paper") -> int:
    """The ops one training step of the paper's main loss dispatches, forward and backward, at ``shape``."""
    loss, output, labels = loss_and_batch(main_recipe(paper, shape))
    loss(as_leaves(output), labels).backward()
    embeddings = as_leaves(output)
    with DispatchedOps() as ops:
        loss(embeddings, labels).backward()
    return ops.count
