"""Data order and augmentation as pure functions of (seed, epoch, batch, slot), so a resumed run sees exactly
the batches and random crops an uninterrupted one would, whatever the number of loader workers.

A batch sampler gives the epoch's batches; ``EpochSlice`` yields them from a start batch on, each position paired
with its own augmentation seed; ``SeededDataset`` applies the transform under that seed.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import numpy as np
from torch.utils.data import Dataset

from dml_core.seeding import seeded_cpu_rng


def augmentation_seeds(seed: int, epoch: int, batch: int, size: int) -> list[int]:
    """Independent 63-bit seeds for the ``size`` samples of one batch."""
    state = np.random.SeedSequence([seed, epoch, batch]).generate_state(size, dtype=np.uint64)
    return [int(value >> np.uint64(1)) for value in state]


class EpochSlice:
    """The batches of one epoch from ``start`` on, as lists of ``(position, augmentation seed)``.

    ``slots``: only these slots of every batch (one process's share in multi-process training); the seeds are
    those of the whole batch, so a slot gets the same augmentation whatever the number of processes. ``epoch`` and
    ``start`` may be set again between iterations (one DataLoader serves every epoch of a run)."""

    def __init__(self, sampler, epoch: int, start: int, seed: int, slots: list[int] | None = None) -> None:
        self.sampler, self.epoch, self.start, self.seed, self.slots = sampler, epoch, start, seed, slots

    def __iter__(self) -> Iterator[list[tuple[int, int]]]:
        epoch, start = self.epoch, self.start  # a kept loader's next epoch may change them while this one runs
        self.sampler.set_epoch(epoch)
        for number, batch in enumerate(self.sampler):
            if number >= start:
                keys = list(zip(batch, augmentation_seeds(self.seed, epoch, number, len(batch)), strict=True))
                yield keys if self.slots is None else [keys[slot] for slot in self.slots]

    def __len__(self) -> int:
        self.sampler.set_epoch(self.epoch)
        return max(0, len(self.sampler) - self.start)


class SeededDataset(Dataset):
    """Wraps a dataset whose transform draws from torch's global RNG; item ``(position, seed)``."""

    def __init__(self, dataset: Dataset) -> None:
        self.dataset = dataset

    def __len__(self) -> int:
        return len(self.dataset)

    def __getitem__(self, key: tuple[int, int]) -> Any:
        position, seed = key
        with seeded_cpu_rng(seed):
            return self.dataset[position]
