"""The fair table's verdicts: a method's mean test R@1 against a reference's over seeds, its 95% t-interval and
two-sided p-value (scipy's t-tests), and Holm's correction over every verdict of a page.

Which interval: paired over the seeds both ran where the two runs of each seed saw the same training batches
(``dml_core.tables.fair.batches``): the seed then fixes the batch order and the crops for both, and pairing takes
that shared variation out; Welch's unpaired interval (unequal spreads, Welch-Satterthwaite degrees of freedom)
where the batches differ. Nothing bounds the difference where nothing measures a spread: one seed on either side
(one common seed when paired), or no spread at all (every seed the same number on both sides, or the same
difference at every seed). There is then no interval, and the verdict is 'ties'. Test-query sampling is not in the
interval: every run is evaluated on the same test images.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, replace

import numpy as np
from scipy import stats

BEATS, TIES, LOSES = "beats", "ties", "loses"
LEVEL = 0.95
PAIRED, WELCH = "paired", "Welch"
ONE_SEED, NO_SPREAD = "1 seed", "no spread"


@dataclass(frozen=True)
class Difference:
    """Mean of ``ours`` minus mean of ``reference`` (paired: the mean difference over the common seeds), its
    interval and p-value from the t-test named by ``test``, and the p-value Holm-adjusted over the verdicts of its
    page (``holm_adjusted``). Unmeasured (infinite bounds, NaN p-values): ``unmeasured`` says why."""

    estimate: float
    low: float
    high: float
    degrees_of_freedom: float  # NaN where no interval was measured
    test: str  # PAIRED or WELCH
    p_value: float = math.nan
    adjusted_p: float = math.nan  # NaN until adjusted; the verdict then reads the unadjusted p-value
    unmeasured: str = ""  # ONE_SEED or NO_SPREAD where no interval was measured

    @property
    def measured(self) -> bool:
        return math.isfinite(self.low) and math.isfinite(self.high)

    @property
    def decisive_p(self) -> float:
        """The p-value the verdict reads: Holm-adjusted where adjusted."""
        return self.adjusted_p if math.isfinite(self.adjusted_p) else self.p_value

    @property
    def verdict(self) -> str:
        """'beats' or 'loses' where the p-value is under 1 - LEVEL (by the estimate's sign), 'ties' otherwise."""
        if not self.measured or not self.decisive_p < 1 - LEVEL:
            return TIES
        return BEATS if self.estimate > 0 else LOSES


def _no_spread(values: np.ndarray) -> bool:
    """Every value the same, up to floating-point noise."""
    return float(np.ptp(values)) <= 1e-9 * max(1.0, float(np.abs(values).max()))


def _unmeasured(estimate: float, test: str, why: str) -> Difference:
    return Difference(estimate, -math.inf, math.inf, math.nan, test, unmeasured=why)


def welch_difference(ours: Sequence[float], reference: Sequence[float], level: float = LEVEL) -> Difference:
    """The ``level`` Welch t-interval of ``mean(ours) - mean(reference)`` (sample variances, ddof 1).

    >>> d = welch_difference([60.0, 62.0, 64.0], [50.0, 51.0, 52.0])
    >>> round(d.estimate, 3), round(d.low, 3), round(d.high, 3), round(d.degrees_of_freedom, 3), d.verdict
    (11.0, 6.845, 15.155, 2.941, 'beats')
    >>> welch_difference([60.0], [50.0, 52.0]).unmeasured, welch_difference([52.0, 52.0], [51.0, 51.0]).unmeasured
    ('1 seed', 'no spread')
    """
    a, b = np.asarray(ours, dtype=float), np.asarray(reference, dtype=float)
    if len(a) == 0 or len(b) == 0:
        raise ValueError("welch_difference: expected at least one value on each side, found none")
    estimate = float(a.mean() - b.mean())
    if len(a) < 2 or len(b) < 2:
        return _unmeasured(estimate, WELCH, ONE_SEED)
    if _no_spread(a) and _no_spread(b):
        return _unmeasured(estimate, WELCH, NO_SPREAD)
    result = stats.ttest_ind(a, b, equal_var=False)
    interval = result.confidence_interval(level)
    return Difference(estimate, float(interval.low), float(interval.high), float(result.df), WELCH,
                      float(result.pvalue))  # fmt: skip


def paired_difference(ours: Mapping[int, float], reference: Mapping[int, float], level: float = LEVEL) -> Difference:
    """The ``level`` paired t-interval of the mean difference over the seeds both sides ran (``{seed: value}``).

    >>> d = paired_difference({0: 60.0, 1: 62.0, 2: 64.5}, {0: 50.0, 1: 51.0, 2: 52.0, 3: 40.0})
    >>> round(d.estimate, 3), round(d.low, 3), round(d.high, 3), d.degrees_of_freedom, d.verdict
    (11.167, 8.041, 14.292, 2.0, 'beats')
    >>> paired_difference({0: 52.0, 1: 53.0}, {0: 51.0, 1: 52.0}).unmeasured  # the same difference at every seed
    'no spread'
    """
    seeds = sorted(set(ours) & set(reference))
    if not seeds:
        raise ValueError(f"paired_difference: expected common seeds, found {sorted(ours)} and {sorted(reference)}")
    a = np.array([ours[seed] for seed in seeds], dtype=float)
    b = np.array([reference[seed] for seed in seeds], dtype=float)
    estimate = float((a - b).mean())
    if len(seeds) < 2:
        return _unmeasured(estimate, PAIRED, ONE_SEED)
    if _no_spread(a - b):
        return _unmeasured(estimate, PAIRED, NO_SPREAD)
    result = stats.ttest_rel(a, b)
    interval = result.confidence_interval(level)
    return Difference(estimate, float(interval.low), float(interval.high), float(result.df), PAIRED,
                      float(result.pvalue))  # fmt: skip


def holm(p_values: Sequence[float]) -> list[float]:
    """Holm's step-down adjusted p-values (Holm 1979): the i-th smallest of m times (m - i + 1), made
    non-decreasing, at most 1. A verdict is firm where its adjusted p-value is under 1 - LEVEL, which holds the
    chance of any false firm verdict among the m at 1 - LEVEL. (scipy has Benjamini-Hochberg, not Holm.)

    >>> [round(p, 3) for p in holm([0.01, 0.04, 0.03])]
    [0.03, 0.06, 0.06]
    """
    order = np.argsort(p_values, kind="stable")
    m = len(p_values)
    adjusted, running = [0.0] * m, 0.0
    for rank, index in enumerate(order):
        running = max(running, min(1.0, (m - rank) * float(p_values[index])))
        adjusted[index] = running
    return adjusted


def holm_adjusted(differences: Sequence[Difference]) -> list[Difference]:
    """``differences`` with their p-values adjusted over those measured (a difference not measured tests nothing)."""
    measured = [index for index, difference in enumerate(differences) if difference.measured]
    adjusted = holm([differences[index].p_value for index in measured])
    result = list(differences)
    for index, p in zip(measured, adjusted, strict=True):
        result[index] = replace(differences[index], adjusted_p=p)
    return result
