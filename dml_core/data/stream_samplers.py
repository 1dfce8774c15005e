"""Two-stream samplers: batches ``[first | second]`` of two streams, for the losses that compare them (damlrrm's
neat and shuffled streams, cgml's two class-aligned graphs)."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any, Literal

import numpy as np

from dml_core.data.class_chunks import draw_avoiding, draw_from_class
from dml_core.data.class_samplers import EpochBatchSampler, PKSampler, shuffled_batches
from dml_core.errors import InputError


class TwoStreamSampler(EpochBatchSampler):
    """damlrrm's asymmetric batches (paper section 3.2, Eq. 1-2): ``[neat (m*k) | shuffled (m*k)]``.

    Neat stream: a PK batch of m classes x k images, covering every training image once per epoch.
    Shuffled stream: m*k images from a pool of ``shuffled_pool_size`` random training images (drawn once per
    seed; default half the training set, "all" the whole of it, "all_interlaced" the whole of it less one batch of
    images where the whole would take as many batches as the neat epoch, so that the cycled streams' periods
    differ, N^s != N^x), by global iteration:
      ``reshuffle_pool=False`` (default): the pool is cut once into batches that are cycled; the pool holds a
        different number of batches than the neat epoch, so the same shuffled batch meets different neat
        batches (Eq. 2: B^s_1 = B^s_l while B^x_1 != B^x_l);
      ``reshuffle_pool=True``: each pass over the pool is a fresh permutation of it, cut into batches (the last
        one topped up with other pool images), so every pass shows each pool image once, in new company.
    The paper does not say how its pools are built or whether they are reshuffled; both readings are here.
    """

    name = "two_stream"

    @classmethod
    def batch_makeup(cls, params: Mapping[str, Any]) -> str:
        p, k = params.get("classes_per_batch"), params.get("images_per_class")
        return f"{p}×{k} + {p * k if p and k else '?'} shuffled"

    def __init__(
        self,
        labels: Sequence[int] | np.ndarray,
        classes_per_batch: int,
        images_per_class: int,
        seed: int = 0,
        shuffled_pool_size: int | Literal["all", "all_interlaced"] | None = None,
        reshuffle_pool: bool = False,
    ) -> None:
        super().__init__(labels, seed)
        self.neat = PKSampler(self.labels, classes_per_batch, images_per_class, seed)
        self.neat_size = self.shuffled_size = classes_per_batch * images_per_class
        self.group_sizes = (self.neat_size, self.shuffled_size)
        self.images_per_class = images_per_class  # in the neat stream (the shuffled one has any number)
        whole = len(self.labels)
        sizes = {None: whole // 2, "all": whole}
        if shuffled_pool_size == "all_interlaced":  # one batch less only where the periods would be equal
            same_period = -(-whole // self.shuffled_size) == len(self.neat) and whole > self.shuffled_size
            sizes["all_interlaced"] = whole - self.shuffled_size if same_period else whole
        pool_size = sizes[shuffled_pool_size] if shuffled_pool_size in sizes else shuffled_pool_size
        if not isinstance(pool_size, int) or not self.shuffled_size <= pool_size <= whole:
            raise InputError(
                f"shuffled_pool_size: expected {self.shuffled_size}..{whole} (one batch to "
                f"the whole split), 'all' or 'all_interlaced', found {shuffled_pool_size!r}"
            )
        self.pool = np.random.default_rng([self.seed, 1]).permutation(len(self.labels))[:pool_size]
        self.reshuffle_pool = reshuffle_pool
        cuts = range(0, pool_size, self.shuffled_size)
        # the last short batch wraps around to the pool's start, so every pool image is used
        self.pool_batches = [np.resize(np.roll(self.pool, -start), self.shuffled_size) for start in cuts]
        if not reshuffle_pool and len(self.pool_batches) == len(self.neat):
            raise InputError(
                f"shuffled_pool_size: {pool_size} gives as many shuffled batches as neat batches "
                f"({len(self.neat)}): the streams would not interlace; choose another size or reshuffle_pool"
            )

    def set_epoch(self, epoch: int) -> None:
        super().set_epoch(epoch)
        self.neat.set_epoch(epoch)

    def derived_settings(self) -> dict[str, int]:
        """The shuffled pool as built (``shuffled_pool_size`` None is half the split, "all_interlaced" depends on
        the split's size): its images and batches, beside the neat epoch's batches."""
        return {"pool_images": len(self.pool), "pool_batches": len(self.pool_batches), "neat_batches": len(self.neat)}

    def pass_batches(self, index: int) -> list[np.ndarray]:
        """The shuffled batches of pass ``index`` over the pool (``reshuffle_pool``): a function of (seed, index)."""
        return shuffled_batches(self.pool, self.shuffled_size, np.random.default_rng([self.seed, 1, index]))

    def shuffled_batch(self, iteration: int, passes: dict[int, list[np.ndarray]]) -> np.ndarray:
        """The shuffled stream's batch at global ``iteration`` (``passes`` caches the passes built so far)."""
        if not self.reshuffle_pool:
            return self.pool_batches[iteration % len(self.pool_batches)]
        index, offset = divmod(iteration, len(self.pool_batches))
        if index not in passes:
            passes[index] = self.pass_batches(index)
        return passes[index][offset]

    def build_batches(self) -> list[list[int]]:
        neat = self.neat.epoch_batches()
        first_iteration = self.epoch * len(neat)  # the neat epoch length is the same for every epoch
        passes: dict[int, list[np.ndarray]] = {}
        return [batch + self.shuffled_batch(first_iteration + i, passes).tolist() for i, batch in enumerate(neat)]


class PairedClassSampler(EpochBatchSampler):
    """cgml's paired batches: ``[A (m*n) | B (m*n)]``, the same m classes in the same order, n images per
    class in each.

    A is a PK batch (A covers every training image of the classes used once per epoch); B redraws n images of
    each of A's classes:
      ``avoid_repeats=False`` (default): independently of A (an image may appear in both, as in the paper's
        Proposition 1; n distinct images when the class has n, else all of them plus random repeats);
      ``avoid_repeats=True``: images that are not in the class's block of A first; only a class with fewer than
        2n images shares some with A (as few as possible: n minus the images A left), and only one with
        fewer than n repeats images within B.
    ``min_class_size``: only classes with at least this many images take part (e.g. n: no repeats inside A;
    2n with ``avoid_repeats``: A and B share no image); 1 (default) keeps every class.
    """

    name = "paired"

    @classmethod
    def batch_makeup(cls, params: Mapping[str, Any]) -> str:
        return f"2 draws of {params.get('classes_per_batch')}×{params.get('images_per_class')}"

    def __init__(
        self,
        labels: Sequence[int] | np.ndarray,
        classes_per_batch: int,
        images_per_class: int,
        seed: int = 0,
        avoid_repeats: bool = False,
        min_class_size: int = 1,
    ) -> None:
        super().__init__(labels, seed)
        self.first = PKSampler(self.labels, classes_per_batch, images_per_class, seed, min_class_size)
        self.k, self.avoid_repeats = images_per_class, avoid_repeats
        self.group_sizes = (classes_per_batch * images_per_class,) * 2
        self.images_per_class = images_per_class

    def set_epoch(self, epoch: int) -> None:
        super().set_epoch(epoch)
        self.first.set_epoch(epoch)

    def redraw(self, label: int, first: np.ndarray, rng: np.random.Generator) -> np.ndarray:
        """B's block of class ``label``, given A's block ``first``."""
        positions = self.first.classes[label]
        return (
            draw_avoiding(positions, first, self.k, rng)
            if self.avoid_repeats
            else draw_from_class(positions, self.k, rng)
        )

    def build_batches(self) -> list[list[int]]:
        rng = self.rng(2)
        batches = []
        for blocks in self.first.class_blocks():
            first = np.concatenate([chunk for _, chunk in blocks])
            second = np.concatenate([self.redraw(label, chunk, rng) for label, chunk in blocks])
            batches.append(np.concatenate([first, second]).tolist())
        return batches
