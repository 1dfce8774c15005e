"""Class chunks: the shared rules by which class-structured samplers cut a split's classes into batches.

They make a real epoch: each sampler's primary stream visits every training image exactly once per epoch, in batches
of equal size, whatever the classes' sizes (``class_chunks`` cuts, ``group_chunks`` batches).
"""

from __future__ import annotations

import math
from collections.abc import Sequence

import numpy as np

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
    """Each class's images shuffled and cut into chunks of K, covering every image once.

    A last chunk shorter than K is topped up with other images of the same class (so a chunk has K distinct images
    whenever the class has at least K); a class with fewer than K images keeps all of them and repeats randomly
    drawn ones up to K (duplicates in a batch: the loss sees the same image under two augmentations). A sampler's
    ``min_class_size`` leaves such classes out instead.
    """
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
    """Batches of P chunks of distinct classes, using every chunk exactly once.

    Classes are drawn at random, weighted by their remaining chunks; a class whose remaining chunks equal the
    remaining batches is taken first, which makes the count exactly ``number_of_batches`` for every seed. When fewer
    than P classes still have chunks, the batch is filled with fresh chunks of other random classes.
    """
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


def draw_avoiding(positions: np.ndarray, avoid: np.ndarray, k: int, rng: np.random.Generator) -> np.ndarray:
    """K images of one class sharing as few as possible with ``avoid``: images outside it first, then (when the
    class has too few) distinct images of ``avoid``, then random repeats only if the class has fewer than K.

    >>> rng = np.random.default_rng(0)
    >>> sorted(draw_avoiding(np.arange(6), np.array([0, 1, 2]), 3, rng).tolist())
    [3, 4, 5]
    >>> draw_avoiding(np.arange(4), np.array([0, 1, 2]), 3, rng).tolist()  # 3 first, then two of 0, 1, 2
    [3, 2, 0]
    """
    fresh = np.setdiff1d(positions, avoid)
    if len(fresh) >= k:
        return rng.choice(fresh, size=k, replace=False)
    shared = np.intersect1d(positions, avoid)
    return np.concatenate([rng.permutation(fresh), draw_from_class(shared, k - len(fresh), rng)])
