"""A percentile bootstrap over test queries: how much a retrieval metric of one run moves with the query sample.

Each resample draws as many queries as there are, with replacement, and takes every metric's mean over them (the
same draw serves every metric); the interval is the 2.5th and 97.5th percentiles of those means. The draws come
from a fixed seed, so the same per-query terms always give the same interval.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

import numpy as np

from dml_core.errors import InputError

RESAMPLES = 1000
SEED = 0
LEVEL = 0.95
# Resample counts held at once (int64): 2**22 values = 32 MiB whatever the number of queries.
_CHUNK_ELEMENTS = 2**22


@dataclass(frozen=True)
class Interval:
    """A bootstrap interval of a metric, in the metric's units (percent)."""

    low: float
    high: float

    @property
    def half_width(self) -> float:
        """Half the interval's width: the spread the status and the nightly gate compare a gap with.

        >>> Interval(52.4, 54.0).half_width
        0.8000000000000007
        """
        return (self.high - self.low) / 2


def bootstrap_intervals(
    values: Mapping[str, np.ndarray], resamples: int = RESAMPLES, seed: int = SEED, level: float = LEVEL
) -> dict[str, Interval]:
    """The ``level`` percentile interval of the mean of each metric's per-query values (``{metric: (n,)}``, the
    same n queries in the same order for every metric).

    >>> bootstrap_intervals({"R@1": np.full(50, 100.0)})
    {'R@1': Interval(low=100.0, high=100.0)}
    """
    names = list(values)
    if not names:
        return {}
    shapes = {name: np.shape(values[name]) for name in names}
    if len(set(shapes.values())) != 1 or len(shapes[names[0]]) != 1 or shapes[names[0]][0] == 0:
        raise InputError(f"per-query values: expected one non-empty (n,) array per metric, found shapes {shapes}")
    columns = np.stack([np.asarray(values[name], dtype=np.float64) for name in names], axis=1)
    n = len(columns)
    if np.isnan(columns).any():
        raise InputError("per-query values: expected numbers, found NaN")
    rng = np.random.default_rng(seed)
    chunk = max(1, _CHUNK_ELEMENTS // n)
    means = np.empty((resamples, len(names)))
    for start in range(0, resamples, chunk):
        rows = min(chunk, resamples - start)
        draws = rng.integers(0, n, size=(rows, n), dtype=np.uint32)
        # How often each query was drawn in each resample; the resampled means are one product with the values.
        slots = (draws + n * np.arange(rows, dtype=np.int64)[:, None]).ravel()
        counts = np.bincount(slots, minlength=rows * n).reshape(rows, n)
        means[start : start + rows] = counts @ columns / n
    tail = 100 * (1 - level) / 2
    low, high = np.percentile(means, [tail, 100 - tail], axis=0)
    return {name: Interval(float(low[i]), float(high[i])) for i, name in enumerate(names)}
