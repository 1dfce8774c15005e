"""The fair table's verdict of a method against the best classic baseline: the 95% Welch t-interval of the
difference of their mean test R@1 over seeds, and 'beats' (the interval lies above zero), 'loses' (below) or 'ties'
(it contains zero).

Why this interval: the seeds are the runs' only repeated source of variation the protocol controls (MLRC reports
95% confidence intervals over its training runs), two methods' seeds are independent runs (seed s of one method
shares nothing meaningful with seed s of another), and their spreads need not be equal, hence Welch's unpaired
interval with Welch-Satterthwaite degrees of freedom. With one seed on either side there is no spread to measure:
the interval is unbounded and the verdict 'ties', as the data cannot tell the two apart. Test-query sampling is not
in it: every run is evaluated on the same test images.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
from scipy import stats

BEATS, TIES, LOSES = "beats", "ties", "loses"
LEVEL = 0.95


@dataclass(frozen=True)
class Difference:
    """Mean of ``ours`` minus mean of ``reference`` and its interval (infinite bounds: not measurable)."""

    estimate: float
    low: float
    high: float
    degrees_of_freedom: float  # NaN where no interval was measured

    @property
    def measured(self) -> bool:
        return math.isfinite(self.low) and math.isfinite(self.high)

    @property
    def verdict(self) -> str:
        if self.low > 0:
            return BEATS
        if self.high < 0:
            return LOSES
        return TIES


def welch_difference(ours: Sequence[float], reference: Sequence[float], level: float = LEVEL) -> Difference:
    """The ``level`` Welch t-interval of ``mean(ours) - mean(reference)`` (sample variances, ddof 1).

    >>> d = welch_difference([60.0, 62.0, 64.0], [50.0, 51.0, 52.0])
    >>> round(d.estimate, 3), round(d.low, 3), round(d.high, 3), round(d.degrees_of_freedom, 3), d.verdict
    (11.0, 6.845, 15.155, 2.941, 'beats')
    >>> welch_difference([60.0], [50.0, 52.0]).verdict, welch_difference([60.0], [50.0, 52.0]).measured
    ('ties', False)
    """
    a, b = np.asarray(ours, dtype=float), np.asarray(reference, dtype=float)
    if len(a) == 0 or len(b) == 0:
        raise ValueError("welch_difference: expected at least one value on each side, found none")
    estimate = float(a.mean() - b.mean())
    if len(a) < 2 or len(b) < 2:
        return Difference(estimate, -math.inf, math.inf, math.nan)
    va, vb = a.var(ddof=1) / len(a), b.var(ddof=1) / len(b)
    if va + vb == 0:  # every seed of both gave the same number: the difference is exact
        return Difference(estimate, estimate, estimate, math.nan)
    df = (va + vb) ** 2 / (va**2 / (len(a) - 1) + vb**2 / (len(b) - 1))
    half = float(stats.t.ppf(0.5 + level / 2, df) * math.sqrt(va + vb))
    return Difference(estimate, estimate - half, estimate + half, float(df))
