"""Batch samplers: iterables of batches (lists of dataset positions), deterministic for (seed, epoch).

Every sampler has ``seed``, ``set_epoch(epoch)``, ``__len__`` (batches per epoch, known before iterating)
and ``group_sizes`` (how a batch splits into consecutive streams, e.g. ``(60, 60)`` for neat + shuffled).
Pass one as ``batch_sampler=`` to a ``torch.utils.data.DataLoader``.

A real epoch: each sampler's primary stream visits every training image exactly once per epoch, in batches
of equal size. Rules for the remainders, shared by all class-structured samplers (``class_chunks``):

* a class's images are shuffled and cut into chunks of K; a last chunk shorter than K is topped up with
  other images of the same class (so a chunk has K distinct images whenever the class has at least K);
* a class with fewer than K images keeps all of them and repeats randomly drawn ones up to K (duplicates
  in a batch: the loss sees the same image under two augmentations);
* each batch takes chunks of P distinct classes, drawn at random weighted by their remaining chunks; a
  class whose remaining chunks equal the remaining batches is taken first, which makes the number of
  batches exactly ``max(ceil(chunks / P), max chunks of one class)`` for every seed. When fewer than P
  classes still have chunks, the batch is filled with fresh chunks of other random classes.
"""

from __future__ import annotations

import math
from collections.abc import Iterator, Sequence

import numpy as np

from dml_core.errors import InputError

Chunk = tuple[int, np.ndarray]  # (class label, K dataset positions)


def positions_by_class(labels: np.ndarray) -> dict[int, np.ndarray]:
    """Dataset positions of each class, classes in increasing label order."""
    order = np.argsort(labels, kind="stable")
    classes, starts = np.unique(labels[order], return_index=True)
    return {int(label): block for label, block in zip(classes, np.split(order, starts[1:]), strict=True)}


def draw_from_class(positions: np.ndarray, k: int, rng: np.random.Generator) -> np.ndarray:
    """K images of one class: distinct when the class has at least K, else all of them plus random repeats."""
    if len(positions) >= k:
        return rng.choice(positions, size=k, replace=False)
    return np.concatenate([rng.permutation(positions), rng.choice(positions, size=k - len(positions))])


def class_chunks(classes: dict[int, np.ndarray], k: int, rng: np.random.Generator) -> dict[int, list[np.ndarray]]:
    """Each class's images shuffled and cut into chunks of K, covering every image once (module rules)."""
    chunks = {}
    for label, positions in classes.items():
        shuffled = rng.permutation(positions)
        pieces = [shuffled[start : start + k] for start in range(0, len(shuffled), k)]
        last = pieces[-1]
        if len(last) < k:
            rest = np.setdiff1d(positions, last)
            top_up = (
                rng.choice(rest, size=k - len(last), replace=False)
                if len(rest) >= k - len(last)
                else draw_from_class(positions, k - len(last), rng)
            )
            pieces[-1] = np.concatenate([last, top_up])
        chunks[label] = pieces
    return chunks


def number_of_batches(chunk_counts: Sequence[int], p: int) -> int:
    """Batches needed to use every chunk once with P distinct classes per batch."""
    return max(math.ceil(sum(chunk_counts) / p), max(chunk_counts))


def group_chunks(
    classes: dict[int, np.ndarray], chunks: dict[int, list[np.ndarray]], p: int, rng: np.random.Generator
) -> list[list[Chunk]]:
    """Batches of P chunks of distinct classes, using every chunk exactly once (module rules)."""
    labels = np.array(list(chunks))
    remaining = np.array([len(chunks[label]) for label in labels])
    batches = []
    for left in range(number_of_batches(remaining.tolist(), p), 0, -1):
        urgent = np.flatnonzero(remaining == left)  # must go now or there would be too few batches left
        others = np.setdiff1d(np.flatnonzero(remaining > 0), urgent)
        wanted = min(p - len(urgent), len(others))
        weights = remaining[others] / remaining[others].sum() if wanted else None
        picked = np.concatenate([urgent, rng.choice(others, size=wanted, replace=False, p=weights)]).astype(int)
        picked = rng.permutation(picked)
        batch: list[Chunk] = []
        for slot in picked:
            remaining[slot] -= 1
            batch.append((int(labels[slot]), chunks[labels[slot]][remaining[slot]]))
        if len(batch) < p:  # too few classes left: fresh chunks of other classes
            unused = np.setdiff1d(labels, labels[picked])
            for label in rng.choice(unused, size=p - len(batch), replace=False):
                batch.append((int(label), draw_from_class(classes[int(label)], len(batch[0][1]), rng)))
        batches.append(batch)
    return batches


class EpochBatchSampler:
    """Shared machinery: seed/epoch bookkeeping and a per-epoch cache of the batch list."""

    group_sizes: tuple[int, ...]

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

    def __iter__(self) -> Iterator[list[int]]:
        return iter([list(batch) for batch in self.epoch_batches()])

    def __len__(self) -> int:
        return len(self.epoch_batches())


class RandomBatchSampler(EpochBatchSampler):
    """Uniformly shuffled batches of ``batch_size``; the last one is topped up with random other images."""

    def __init__(self, labels: Sequence[int] | np.ndarray, batch_size: int, seed: int = 0) -> None:
        super().__init__(labels, seed)
        if not 0 < batch_size <= len(self.labels):
            raise InputError(f"batch_size: expected 1..{len(self.labels)}, found {batch_size}")
        self.batch_size = batch_size
        self.group_sizes = (batch_size,)

    def build_batches(self) -> list[list[int]]:
        rng = self.rng()
        order = rng.permutation(len(self.labels))
        batches = [order[start : start + self.batch_size] for start in range(0, len(order), self.batch_size)]
        short = self.batch_size - len(batches[-1])
        if short:
            rest = np.setdiff1d(order, batches[-1])
            batches[-1] = np.concatenate([batches[-1], rng.choice(rest, size=short, replace=False)])
        return [batch.tolist() for batch in batches]


def _check_pk(classes: dict[int, np.ndarray], p: int, k: int, what: str) -> None:
    if not 1 <= p <= len(classes):
        raise InputError(f"{what}: expected 1..{len(classes)} classes per batch (the split's classes), found {p}")
    if k < 1:
        raise InputError(f"{what}: expected at least 1 image per class, found {k}")


class PKSampler(EpochBatchSampler):
    """P classes x K images per batch, class blocks consecutive: ``[c1 x K, c2 x K, ...]``."""

    def __init__(
        self, labels: Sequence[int] | np.ndarray, classes_per_batch: int, images_per_class: int, seed: int = 0
    ) -> None:
        super().__init__(labels, seed)
        self.classes = positions_by_class(self.labels)
        _check_pk(self.classes, classes_per_batch, images_per_class, "PK sampler")
        self.p, self.k = classes_per_batch, images_per_class
        self.group_sizes = (self.p * self.k,)

    def class_blocks(self) -> list[list[Chunk]]:
        """This epoch's batches as lists of (class, K positions) blocks."""
        rng = self.rng(0)
        return group_chunks(self.classes, class_chunks(self.classes, self.k, rng), self.p, rng)

    def build_batches(self) -> list[list[int]]:
        return [np.concatenate([chunk for _, chunk in blocks]).tolist() for blocks in self.class_blocks()]


class TwoStreamSampler(EpochBatchSampler):
    """damlrrm's asymmetric batches (paper section 3.2, Eq. 1-2): ``[neat (m*k) | shuffled (m*k)]``.

    Neat stream: a PK batch of m classes x k images, covering every training image once per epoch.
    Shuffled stream: m*k images from a fixed pool of ``shuffled_pool_size`` random training images (drawn once
    per seed; default half the training set), cut into its own batches and cycled by global iteration. The
    pool holds a different number of batches than the neat epoch, so the same shuffled batch meets different
    neat batches over the iterations (Eq. 2: B^s_1 = B^s_l while B^x_1 != B^x_l). The paper does not say how
    its pools are built (damlrrm_method.md open question 8); this is the reading chosen here.
    """

    def __init__(
        self,
        labels: Sequence[int] | np.ndarray,
        classes_per_batch: int,
        images_per_class: int,
        seed: int = 0,
        shuffled_pool_size: int | None = None,
    ) -> None:
        super().__init__(labels, seed)
        self.neat = PKSampler(self.labels, classes_per_batch, images_per_class, seed)
        self.neat_size = self.shuffled_size = classes_per_batch * images_per_class
        self.group_sizes = (self.neat_size, self.shuffled_size)
        pool_size = len(self.labels) // 2 if shuffled_pool_size is None else shuffled_pool_size
        if not self.shuffled_size <= pool_size <= len(self.labels):
            raise InputError(
                f"shuffled_pool_size: expected {self.shuffled_size}..{len(self.labels)} (one batch to "
                f"the whole split), found {pool_size}"
            )
        pool = np.random.default_rng([self.seed, 1]).permutation(len(self.labels))[:pool_size]
        cuts = range(0, pool_size, self.shuffled_size)
        # the last short batch wraps around to the pool's start, so every pool image is used
        self.pool_batches = [np.resize(np.roll(pool, -start), self.shuffled_size) for start in cuts]
        if len(self.pool_batches) == len(self.neat):
            raise InputError(
                f"shuffled_pool_size: {pool_size} gives as many shuffled batches as neat batches "
                f"({len(self.neat)}): the streams would not interlace; choose another size"
            )

    def set_epoch(self, epoch: int) -> None:
        super().set_epoch(epoch)
        self.neat.set_epoch(epoch)

    def build_batches(self) -> list[list[int]]:
        neat = self.neat.epoch_batches()
        first_iteration = self.epoch * len(neat)  # the neat epoch length is the same for every epoch
        pool = self.pool_batches
        return [batch + pool[(first_iteration + i) % len(pool)].tolist() for i, batch in enumerate(neat)]


class PairedClassSampler(EpochBatchSampler):
    """cgml's paired batches: ``[A (m*n) | B (m*n)]``, the same m classes in the same order, n images per
    class in each, drawn independently (an image may appear in both, as in the paper's Proposition 1).

    A is a PK batch (A covers every training image once per epoch); B redraws n images of each of A's classes.
    """

    def __init__(
        self, labels: Sequence[int] | np.ndarray, classes_per_batch: int, images_per_class: int, seed: int = 0
    ) -> None:
        super().__init__(labels, seed)
        self.first = PKSampler(self.labels, classes_per_batch, images_per_class, seed)
        self.k = images_per_class
        self.group_sizes = (classes_per_batch * images_per_class,) * 2

    def set_epoch(self, epoch: int) -> None:
        super().set_epoch(epoch)
        self.first.set_epoch(epoch)

    def build_batches(self) -> list[list[int]]:
        rng = self.rng(2)
        batches = []
        for blocks in self.first.class_blocks():
            first = np.concatenate([chunk for _, chunk in blocks])
            second = np.concatenate([draw_from_class(self.first.classes[label], self.k, rng) for label, _ in blocks])
            batches.append(np.concatenate([first, second]).tolist())
        return batches


SAMPLERS: dict[str, type[EpochBatchSampler]] = {
    "random": RandomBatchSampler,
    "pk": PKSampler,
    "two_stream": TwoStreamSampler,
    "paired": PairedClassSampler,
}
