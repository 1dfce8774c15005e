"""The generic samplers: the seed/epoch machinery every sampler shares, uniformly random batches, and P classes
x K images (PK) batches cut by the rules of ``class_chunks``."""

from __future__ import annotations

from collections.abc import Iterator, Mapping, Sequence
from typing import Any, ClassVar

import numpy as np

from dml_core.data.class_chunks import Chunk, class_chunks, group_chunks, positions_by_class
from dml_core.errors import InputError


def shuffled_batches(items: np.ndarray, size: int, rng: np.random.Generator) -> list[np.ndarray]:
    """``items`` in random order cut into batches of ``size``, the last one topped up with other random items.

    >>> [b.tolist() for b in shuffled_batches(np.arange(5), 2, np.random.default_rng(0))]
    [[2, 4], [3, 0], [1, 0]]
    """
    order = rng.permutation(items)
    batches = [order[start : start + size] for start in range(0, len(order), size)]
    short = size - len(batches[-1])
    if short:
        rest = np.setdiff1d(order, batches[-1])
        batches[-1] = np.concatenate([batches[-1], rng.choice(rest, size=short, replace=False)])
    return batches


class EpochBatchSampler:
    """Shared machinery: seed/epoch bookkeeping and a per-epoch cache of the batch list. A sampler a recipe may name
    declares its ``name`` (``sampler.name``) here, on its class: the registry (``samplers.SAMPLERS``) collects them."""

    name: ClassVar[str]
    group_sizes: tuple[int, ...]
    # Images of each class in every group of a batch (a PK batch's K); None where the count is not fixed. Losses
    # that loop over a class's samples (damlrrm's Prim trees) take it instead of reading the labels (a host sync).
    images_per_class: int | None = None

    def __init__(self, labels: Sequence[int] | np.ndarray, seed: int = 0) -> None:
        self.labels = np.asarray(labels, dtype=np.int64)
        if self.labels.ndim != 1 or len(self.labels) == 0:
            raise InputError(f"labels: expected a non-empty 1-d sequence, found shape {self.labels.shape}")
        self.seed = int(seed)
        self.epoch = 0
        self._cached: tuple[int, list[list[int]]] | None = None

    def set_epoch(self, epoch: int) -> None:
        """Select the epoch whose batches the next iteration yields."""
        self.epoch = int(epoch)

    def rng(self, *stream: int) -> np.random.Generator:
        """The generator of (seed, epoch, stream...): independent streams, reproducible."""
        return np.random.default_rng([self.seed, self.epoch, *stream])

    def epoch_batches(self) -> list[list[int]]:
        if self._cached is None or self._cached[0] != self.epoch:
            self._cached = (self.epoch, self.build_batches())
        return self._cached[1]

    def build_batches(self) -> list[list[int]]:
        raise NotImplementedError

    def derived_settings(self) -> dict[str, int]:
        """What the sampler derived from its parameters and the labels that decides its batches beyond them (a
        results file records it: ``samplers.sampler_record``); none for most samplers."""
        return {}

    @classmethod
    def batch_makeup(cls, params: Mapping[str, Any]) -> str:
        """A batch of this sampler under a recipe's ``params``, in a few words (the fair page's batches column)."""
        return cls.name

    def __iter__(self) -> Iterator[list[int]]:
        return iter([list(batch) for batch in self.epoch_batches()])

    def __len__(self) -> int:
        return len(self.epoch_batches())


class RandomBatchSampler(EpochBatchSampler):
    """Uniformly shuffled batches of ``batch_size``; the last one is topped up with random other images."""

    name = "random"

    @classmethod
    def batch_makeup(cls, params: Mapping[str, Any]) -> str:
        return f"random {params.get('batch_size')}"

    def __init__(self, labels: Sequence[int] | np.ndarray, batch_size: int, seed: int = 0) -> None:
        super().__init__(labels, seed)
        if not 0 < batch_size <= len(self.labels):
            raise InputError(f"batch_size: expected 1..{len(self.labels)}, found {batch_size}")
        self.batch_size = batch_size
        self.group_sizes = (batch_size,)

    def build_batches(self) -> list[list[int]]:
        return [batch.tolist() for batch in shuffled_batches(np.arange(len(self.labels)), self.batch_size, self.rng())]


def _check_pk(classes: dict[int, np.ndarray], p: int, k: int, what: str) -> None:
    if not 1 <= p <= len(classes):
        raise InputError(f"{what}: expected 1..{len(classes)} classes per batch (the split's classes), found {p}")
    if k < 1:
        raise InputError(f"{what}: expected at least 1 image per class, found {k}")


def classes_with_at_least(labels: np.ndarray, min_class_size: int, what: str) -> dict[int, np.ndarray]:
    """Each class's positions (``positions_by_class``), classes with fewer than ``min_class_size`` images left out."""
    if min_class_size < 1:
        raise InputError(f"{what}: min_class_size: expected at least 1, found {min_class_size}")
    classes = {label: block for label, block in positions_by_class(labels).items() if len(block) >= min_class_size}
    if not classes:
        largest = max(len(block) for block in positions_by_class(labels).values())
        raise InputError(f"{what}: min_class_size {min_class_size} leaves no class (the largest has {largest} images)")
    return classes


class PKSampler(EpochBatchSampler):
    """P classes x K images per batch, class blocks consecutive: ``[c1 x K, c2 x K, ...]``.

    ``min_class_size``: only classes with at least this many images take part (their images make the epoch);
    1 (default) keeps every class, a class smaller than K then repeats images (``class_chunks``).
    """

    name = "pk"

    @classmethod
    def batch_makeup(cls, params: Mapping[str, Any]) -> str:
        return f"PK {params.get('classes_per_batch')}×{params.get('images_per_class')}"

    def __init__(
        self,
        labels: Sequence[int] | np.ndarray,
        classes_per_batch: int,
        images_per_class: int,
        seed: int = 0,
        min_class_size: int = 1,
    ) -> None:
        super().__init__(labels, seed)
        self.classes = classes_with_at_least(self.labels, min_class_size, "PK sampler")
        _check_pk(self.classes, classes_per_batch, images_per_class, "PK sampler")
        self.p, self.k = classes_per_batch, images_per_class
        self.group_sizes = (self.p * self.k,)
        self.images_per_class = images_per_class

    def class_blocks(self) -> list[list[Chunk]]:
        """This epoch's batches as lists of (class, K positions) blocks."""
        rng = self.rng(0)
        return group_chunks(self.classes, class_chunks(self.classes, self.k, rng), self.p, rng)

    def build_batches(self) -> list[list[int]]:
        return [np.concatenate([chunk for _, chunk in blocks]).tolist() for blocks in self.class_blocks()]
