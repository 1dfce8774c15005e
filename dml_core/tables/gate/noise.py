"""How much a reproduced number moves from run to run, measured where the results allow it, and the gate the
status and the nightly check use: the larger of the metric's tolerance and that measured spread.

- Several seeds of a deep run: the sample standard deviation over seeds (the paper's number is one run, so a
  single run of ours may differ from it by about that much).
- A linear (anml Table 2) run: the standard error of its mean over splits (the paper's number is itself a mean
  over 30 splits, so two such means differ by about that much, not by the split-to-split spread).
- One seed of a deep run: the half-width of the 95% percentile bootstrap interval over its test queries, from the
  per-query terms stored beside its results file (``PerQueryIntervals``; ``dml_core.tables.gate.query_intervals``),
  else not measured. NMI and F1 (clustering metrics, not means over queries) have no such interval.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Protocol

import numpy as np

from dml_core.evaluation.bootstrap import Interval
from dml_core.results import AnyResults

NOT_MEASURED = "not measured"
TOLERANCE = "tolerance"
BOOTSTRAP = "95% bootstrap interval over queries"


@dataclass(frozen=True)
class Spread:
    """A half-width in points (NaN when not measured) and what it is, e.g. ``std over 3 seeds``."""

    value: float
    basis: str

    @property
    def measured(self) -> bool:
        return not math.isnan(self.value)


UNMEASURED = Spread(math.nan, NOT_MEASURED)


class PerQueryIntervals(Protocol):
    """Where per-query data (first-positive ranks, precision terms) is stored beside a results file: the 95%
    bootstrap interval of ``metric`` for one run, or None when that run has no such data for it."""

    def interval(self, results: AnyResults, metric: str) -> Interval | None: ...


class NoPerQueryData:
    """No per-query data is read: every single-seed number is unmeasured."""

    def interval(self, results: AnyResults, metric: str) -> Interval | None:
        return None


def line_spread(values: Sequence[float], unit: str, bootstrap_half_width: float | None = None) -> Spread:
    """The spread of a line pooled from ``values``: one per seed (``unit="seed"``, a deep run) or one per split
    (``unit="split"``, a linear run); a single seed takes its bootstrap half-width when there is one.

    >>> line_spread([54.0, 56.0], "seed")
    Spread(value=1.4142135623730951, basis='std over 2 seeds')
    >>> line_spread([96.0, 100.0, 98.0, 98.0], "split")
    Spread(value=0.816496580927726, basis='standard error over 4 splits')
    >>> line_spread([55.0], "seed"), line_spread([55.0], "seed", 0.9)
    (Spread(value=nan, basis='not measured'), Spread(value=0.9, basis='95% bootstrap interval over queries'))
    """
    array = np.asarray(values, dtype=float)
    if unit == "split" and len(array) > 1:
        return Spread(float(array.std(ddof=1) / math.sqrt(len(array))), f"standard error over {len(array)} splits")
    if unit == "seed" and len(array) > 1:
        return Spread(float(array.std(ddof=1)), f"std over {len(array)} seeds")
    if unit == "seed" and len(array) == 1 and bootstrap_half_width is not None:
        return Spread(float(bootstrap_half_width), BOOTSTRAP)
    return UNMEASURED


def bootstrap_interval(runs: Sequence[AnyResults], metric: str, intervals: PerQueryIntervals) -> Interval | None:
    """The per-query bootstrap interval of a single run (None for several runs or without per-query data)."""
    return intervals.interval(runs[0], metric) if len(runs) == 1 else None


def gate(tolerance: float, spread: Spread) -> tuple[float, str]:
    """The half-width the status and the nightly check compare a gap with, and which of the two it is.

    >>> gate(1.5, Spread(2.0, "std over 3 seeds")), gate(1.5, Spread(0.4, "std over 3 seeds")), gate(1.5, UNMEASURED)
    ((2.0, 'std over 3 seeds'), (1.5, 'tolerance'), (1.5, 'tolerance'))
    """
    if spread.measured and spread.value > tolerance:
        return spread.value, spread.basis
    return tolerance, TOLERANCE


def difference_noise(*spreads: float) -> float:
    """The spread of a difference of independent numbers (root sum of squares; NaN terms count as 0).

    >>> difference_noise(3.0, 4.0), difference_noise(math.nan, 2.0)
    (5.0, 2.0)
    """
    return math.sqrt(sum(0.0 if math.isnan(s) else s * s for s in spreads))
