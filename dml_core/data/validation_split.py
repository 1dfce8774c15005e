"""The class-disjoint validation split carved from a data set's training classes (``data.validation``).

Model selection on the test classes (the papers' practice: the best test R@1 over training) reports a number the
test classes chose; Musgrave et al. (ECCV 2020, section 4.1) and Roth et al. (ICML 2020, section 3) select on
classes held out of the training ones instead. Which classes are held out depends on the training classes, the
fraction and the split's own seed only: never on the run's seed or the method, so every method of a comparison
is selected on the same classes, and never on the test split.
"""

from __future__ import annotations

import hashlib
from collections.abc import Iterable

import numpy as np

from dml_core.data.index import SplitIndex
from dml_core.errors import InputError
from dml_core.recipes.settings import ValidationSplitSettings

VALIDATION_SPLIT = "validation"  # the held-out part's split name (a SplitIndex's ``split``)
MIN_CLASSES = 2  # each side: a retrieval needs a second class to rank against, a loss a negative


def held_out_classes(class_ids: Iterable[int], fraction: float, seed: int) -> np.ndarray:
    """The training classes held out for validation, sorted: ``round(fraction x classes)`` of them (at least 2),
    a uniform choice seeded by ``seed`` among the distinct ``class_ids`` (repeats and order do not matter).

    >>> held_out_classes(range(10), 0.2, seed=0).tolist()
    [6, 7]
    >>> held_out_classes([5, 3, 3, 9, 1, 7, 7], 0.1, seed=0).tolist()  # 0.4 classes: at least 2
    [7, 9]
    """
    if not 0 < fraction < 1:
        raise InputError(
            f"data.validation.fraction: expected a share of the training classes in (0, 1), found {fraction}"
        )
    classes = np.unique(np.fromiter(class_ids, dtype=np.int64))
    count = max(MIN_CLASSES, round(fraction * len(classes)))
    if len(classes) - count < MIN_CLASSES:
        raise InputError(
            f"data.validation.fraction: {fraction} of {len(classes)} training classes holds out {count}; expected at "
            f"least {MIN_CLASSES} held out and {MIN_CLASSES} left to train on"
        )
    return np.sort(np.random.default_rng(seed).choice(classes, size=count, replace=False))


def training_positions(labels: np.ndarray, settings: ValidationSplitSettings | None) -> np.ndarray:
    """Positions (in order) of the training split's images whose class is not held out; every one without a split.

    >>> training_positions(np.array([4, 0, 4, 1, 2, 3]), ValidationSplitSettings(fraction=0.4, seed=0)).tolist()
    [1, 3, 4]
    """
    if settings is None:
        return np.arange(len(labels))
    held_out = held_out_classes(labels, settings.fraction, settings.seed)
    return np.flatnonzero(~np.isin(labels, held_out))


def split_off_validation(
    train: SplitIndex, settings: ValidationSplitSettings | None
) -> tuple[SplitIndex, SplitIndex | None]:
    """The training split without its held-out classes, and the held-out classes' images (None without a split)."""
    if settings is None:
        return train, None
    kept = np.zeros(len(train), dtype=bool)
    kept[training_positions(train.labels, settings)] = True
    return _rows(train, kept, train.split), _rows(train, ~kept, VALIDATION_SPLIT)


def validation_record(settings: ValidationSplitSettings, held_out: Iterable[int]) -> dict:
    """What the results file's ``evaluation_protocol`` says of the split: its settings, how many classes it holds
    and the sha256 of their sorted ids (comma-separated), which names them without listing them.

    >>> validation_record(ValidationSplitSettings(fraction=0.2, seed=0), [7, 6])["classes"]
    2
    """
    classes = sorted({int(class_id) for class_id in held_out})
    listed = ",".join(str(class_id) for class_id in classes)
    return {
        "fraction": settings.fraction,
        "seed": settings.seed,
        "classes": len(classes),
        "classes_sha256": hashlib.sha256(listed.encode()).hexdigest(),
    }


def _rows(split: SplitIndex, mask: np.ndarray, name: str) -> SplitIndex:
    paths = tuple(path for path, keep in zip(split.relative_paths, mask, strict=True) if keep)
    return SplitIndex(split.dataset, name, split.root, paths, split.labels[mask])
