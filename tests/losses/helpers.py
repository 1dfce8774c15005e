"""Shared test helpers: random batches, value+gradient comparison, the hand-computed square fixture."""

from __future__ import annotations

import math
from collections.abc import Callable

import torch
import torch.nn.functional as F
from torch import Tensor

SEEDS = (0, 1, 2)
SQRT2 = math.sqrt(2.0)


def random_batch(seed: int, classes: int = 4, per_class: int = 3, dim: int = 5) -> tuple[Tensor, Tensor]:
    """float64 embeddings (not normalised) and shuffled labels, ``classes`` x ``per_class``."""
    gen = torch.Generator().manual_seed(seed)
    x = torch.randn(classes * per_class, dim, generator=gen, dtype=torch.float64)
    labels = torch.arange(classes).repeat_interleave(per_class)
    return x, labels[torch.randperm(len(labels), generator=gen)]


def value_and_grad(fn: Callable[[Tensor], Tensor], x: Tensor) -> tuple[Tensor, Tensor]:
    """fn(x) and its gradient with respect to x."""
    x = x.detach().clone().requires_grad_(True)
    value = fn(x)
    (grad,) = torch.autograd.grad(value, x)
    return value.detach(), grad


def assert_same_value_and_grad(
    ours: Callable[[Tensor], Tensor],
    theirs: Callable[[Tensor], Tensor],
    x: Tensor,
    rtol: float = 1e-9,
    atol: float = 1e-11,
) -> None:
    """Same loss value and same gradient w.r.t. the embeddings; a loss of exactly 0 is not a real test."""
    ours_value, ours_grad = value_and_grad(ours, x)
    their_value, their_grad = value_and_grad(theirs, x)
    assert ours_value.abs() > 1e-6, "degenerate test: the loss is zero"
    torch.testing.assert_close(ours_value, their_value, rtol=rtol, atol=atol)
    torch.testing.assert_close(ours_grad, their_grad, rtol=rtol, atol=atol)


def normalized(loss: Callable[[Tensor, Tensor], Tensor], labels: Tensor) -> Callable[[Tensor], Tensor]:
    """The loss on L2-normalised embeddings, as a function of the raw ones (the gradient goes through)."""
    return lambda x: loss(F.normalize(x, dim=1), labels)


def square() -> tuple[Tensor, Tensor]:
    """Four unit vectors in 2-D: A=(1,0), B=(0,1) of class 0, C=(-1,0), D=(0,-1) of class 1.

    Positive pairs A-B, C-D: distance sqrt 2, cosine 0. Every point has one negative at distance 2
    (cosine -1: A-C, B-D) and one at distance sqrt 2 (cosine 0: A-D, B-C).
    """
    x = torch.tensor([[1.0, 0.0], [0.0, 1.0], [-1.0, 0.0], [0.0, -1.0]], dtype=torch.float64)
    return x, torch.tensor([0, 0, 1, 1])
