"""What every evaluation path refuses before any search or clustering runs: empty or zero-width embeddings
(faiss divides by the width and kills the process with SIGFPE), non-finite values, and labels that are missing
(NaN or None would silently become one class of their own). Each refusal is one ``InputError`` line.
"""

from __future__ import annotations

import numpy as np

from dml_core.errors import InputError

MAX_SHOWN = 5


def check_embedding_shape(shape: tuple[int, ...], name: str = "embeddings") -> None:
    """A 2-D shape ``(n, d)`` with ``n >= 1`` and ``d >= 1``.

    >>> check_embedding_shape((4, 0))
    Traceback (most recent call last):
    dml_core.errors.InputError: embeddings: expected a non-empty 2-D array (n, d) with d >= 1, found shape (4, 0)
    """
    if len(shape) != 2 or shape[0] == 0 or shape[1] == 0:
        raise InputError(f"{name}: expected a non-empty 2-D array (n, d) with d >= 1, found shape {tuple(shape)}")


def check_embeddings(embeddings: np.ndarray, name: str = "embeddings") -> None:
    """Non-empty, at least one dimension wide, numeric and finite."""
    check_embedding_shape(embeddings.shape, name)
    if not np.issubdtype(embeddings.dtype, np.number):
        raise InputError(f"{name}: expected numbers, found dtype {embeddings.dtype}")
    bad = np.flatnonzero(~np.isfinite(embeddings).all(1))
    if len(bad):
        shown = ", ".join(str(i) for i in bad[:MAX_SHOWN])
        raise InputError(f"{name}: expected finite values, found NaN or inf in {len(bad)} row(s) (first: {shown})")


def _missing(labels: np.ndarray) -> np.ndarray:
    if labels.dtype.kind in "fc":
        return ~np.isfinite(labels)
    if labels.dtype.kind == "O":
        return np.array([value is None or (isinstance(value, float) and not np.isfinite(value)) for value in labels])
    return np.zeros(len(labels), dtype=bool)


def check_labels(labels: np.ndarray, n: int, name: str = "labels") -> None:
    """One present (not NaN, inf or None) label per embedding.

    >>> check_labels(np.array([1.0, float("nan"), 2.0]), 3)
    Traceback (most recent call last):
    dml_core.errors.InputError: labels: expected a class label for every item, found NaN, inf or None in 1 (first: 1)
    """
    if labels.ndim != 1:
        raise InputError(f"{name}: expected a 1-D array, found shape {labels.shape}")
    if len(labels) != n:
        raise InputError(f"{name}: expected one label per embedding ({n}), found {len(labels)}")
    missing = np.flatnonzero(_missing(labels))
    if len(missing):
        shown = ", ".join(str(i) for i in missing[:MAX_SHOWN])
        raise InputError(
            f"{name}: expected a class label for every item, found NaN, inf or None in {len(missing)} (first: {shown})"
        )
