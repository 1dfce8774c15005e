"""Per-sample seeding of torch's CPU generator, shared by the PIL augmentation path and the batch path: both must
draw the same numbers for the same seed, so both go through this one function."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager

import torch


@contextmanager
def seeded_cpu_rng(seed: int) -> Iterator[None]:
    """Draw from torch's CPU generator seeded with ``seed``; the global generator state is restored after.

    Seeds only the CPU generator (the one transforms draw from): ``torch.manual_seed`` also seeds CUDA, which
    costs far more a call (docs/performance.md) and would run once per image.
    """
    with torch.random.fork_rng(devices=[]):
        torch.default_generator.manual_seed(seed)
        yield
