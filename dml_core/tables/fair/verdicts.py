"""The fair page's statistics: a method's mean test metric against a reference's over seeds, as a t-statistic with
its standard error and degrees of freedom; Holm's adjustment over the study's declared family; the verdict words.

Which test: paired over the seeds both ran where the two runs of each seed saw the same training batches under the
same code (``dml_core.tables.fair.batches``): the seed then fixes the batch order and the crops for both, and pairing
takes that shared variation out; Welch's unpaired test (unequal spreads, Welch-Satterthwaite degrees of freedom)
otherwise. Nothing bounds the difference where nothing measures a spread: one seed on either side (one common seed
when paired), or no spread at all (every seed the same number on both sides, or the same difference at every seed).
The difference is then **not estimable**. Test-query sampling is in no interval: every run is evaluated on the same
test images.

The words (``Verdict.word``), at the study's family-wise level (``level``, 0.05) over a family of ``m`` hypotheses:
**better** or **worse** where the Holm-adjusted two-sided p-value is under the level, by the sign of the difference
(its interval at the level the adjustment implies excludes 0); **equivalent** where, instead, the Holm-adjusted p-value
of the two one-sided tests (TOST) against the declared margin is under the level (the difference is shown inside
±margin); **inconclusive** otherwise. An exploratory comparison is a family of one: unadjusted. Each verdict states
its minimum detectable difference: ``(t(1 - level/(2m), df) + t(power, df)) x SE``, the true difference a two-sided
test at Holm's strictest step (level/m) would find with probability ``power``, at the observed standard error SE
and degrees of freedom df (docs/fair.md).
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass

import numpy as np
from scipy import stats

BETTER, WORSE, EQUIVALENT, INCONCLUSIVE, NOT_ESTIMABLE = (
    "better",
    "worse",
    "equivalent",
    "inconclusive",
    "not estimable",
)
PAIRED, WELCH = "paired", "Welch"
ONE_SEED, NO_SPREAD = "1 seed", "no spread"


@dataclass(frozen=True)
class Difference:
    """Mean of ``ours`` minus mean of ``reference`` (paired: the mean difference over the common seeds), its standard
    error and degrees of freedom under the t-test named by ``test``. Not estimable (NaN standard error):
    ``unmeasured`` says why."""

    estimate: float
    standard_error: float
    degrees_of_freedom: float  # NaN where not estimable
    test: str  # PAIRED or WELCH
    unmeasured: str = ""  # ONE_SEED or NO_SPREAD where not estimable

    @property
    def measured(self) -> bool:
        return math.isfinite(self.standard_error) and self.standard_error > 0

    @property
    def p_value(self) -> float:
        """Two-sided p-value of a zero difference (NaN where not estimable)."""
        if not self.measured:
            return math.nan
        return float(2 * stats.t.sf(abs(self.estimate) / self.standard_error, self.degrees_of_freedom))

    def interval(self, confidence: float) -> tuple[float, float]:
        """The two-sided t-interval at ``confidence`` (infinite where not estimable)."""
        if not self.measured:
            return -math.inf, math.inf
        half = float(stats.t.ppf(0.5 + confidence / 2, self.degrees_of_freedom)) * self.standard_error
        return self.estimate - half, self.estimate + half

    def tost_p(self, margin: float) -> float:
        """The p-value of the two one-sided tests that the difference lies within ``±margin`` (the larger of the two;
        NaN where not estimable)."""
        if not self.measured:
            return math.nan
        above = stats.t.sf((self.estimate + margin) / self.standard_error, self.degrees_of_freedom)  # H0: <= -margin
        below = stats.t.cdf((self.estimate - margin) / self.standard_error, self.degrees_of_freedom)  # H0: >= margin
        return float(max(above, below))

    def detectable(self, alpha: float, power: float) -> float:
        """The minimum detectable difference of a two-sided test at ``alpha`` with ``power``, at this standard error
        and these degrees of freedom (NaN where not estimable)."""
        if not self.measured:
            return math.nan
        quantiles = stats.t.ppf(1 - alpha / 2, self.degrees_of_freedom) + stats.t.ppf(power, self.degrees_of_freedom)
        return float(quantiles * self.standard_error)


def _no_spread(values: np.ndarray) -> bool:
    """Every value the same, up to floating-point noise."""
    return float(np.ptp(values)) <= 1e-9 * max(1.0, float(np.abs(values).max()))


def _unmeasured(estimate: float, test: str, why: str) -> Difference:
    return Difference(estimate, math.nan, math.nan, test, why)


def welch_difference(ours: Sequence[float], reference: Sequence[float]) -> Difference:
    """``mean(ours) - mean(reference)`` under Welch's t-test (sample variances, ddof 1).

    >>> d = welch_difference([60.0, 62.0, 64.0], [50.0, 51.0, 52.0])
    >>> round(d.estimate, 3), [round(x, 3) for x in d.interval(0.95)], round(d.degrees_of_freedom, 3)
    (11.0, [6.845, 15.155], 2.941)
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
    share_a, share_b = a.var(ddof=1) / len(a), b.var(ddof=1) / len(b)
    df = (share_a + share_b) ** 2 / (share_a**2 / (len(a) - 1) + share_b**2 / (len(b) - 1))
    return Difference(estimate, float(math.sqrt(share_a + share_b)), float(df), WELCH)


def paired_difference(ours: Mapping[int, float], reference: Mapping[int, float]) -> Difference:
    """The mean difference over the seeds both sides ran (``{seed: value}``) under the paired t-test.

    >>> d = paired_difference({0: 60.0, 1: 62.0, 2: 64.5}, {0: 50.0, 1: 51.0, 2: 52.0, 3: 40.0})
    >>> round(d.estimate, 3), [round(x, 3) for x in d.interval(0.95)], d.degrees_of_freedom
    (11.167, [8.041, 14.292], 2.0)
    >>> paired_difference({0: 52.0, 1: 53.0}, {0: 51.0, 1: 52.0}).unmeasured  # the same difference at every seed
    'no spread'
    """
    seeds = sorted(set(ours) & set(reference))
    if not seeds:
        raise ValueError(f"paired_difference: expected common seeds, found {sorted(ours)} and {sorted(reference)}")
    differences = np.array([ours[seed] - reference[seed] for seed in seeds], dtype=float)
    estimate = float(differences.mean())
    if len(seeds) < 2:
        return _unmeasured(estimate, PAIRED, ONE_SEED)
    if _no_spread(differences):
        return _unmeasured(estimate, PAIRED, NO_SPREAD)
    standard_error = float(differences.std(ddof=1) / math.sqrt(len(seeds)))
    return Difference(estimate, standard_error, float(len(seeds) - 1), PAIRED)


def holm(p_values: Sequence[float], family_size: int | None = None) -> list[float]:
    """Holm's step-down adjusted p-values (Holm 1979) in a family of ``family_size`` hypotheses (default: those
    given), the ones not given counting as untested (p = 1, so that a family run in part is corrected as a whole):
    the i-th smallest times (m - i + 1), made non-decreasing, at most 1. A verdict is firm where its adjusted
    p-value is under the level, which holds the chance of any false firm verdict among the m at that level.
    (scipy has Benjamini-Hochberg, not Holm.)

    >>> [round(p, 3) for p in holm([0.01, 0.04, 0.03])]
    [0.03, 0.06, 0.06]
    >>> [round(p, 3) for p in holm([0.01, 0.04, 0.03], family_size=4)]
    [0.04, 0.09, 0.09]
    """
    m = len(p_values) if family_size is None else family_size
    if m < len(p_values):
        raise ValueError(f"holm: expected a family of at least the {len(p_values)} p-values given, found {m}")
    order = np.argsort(p_values, kind="stable")
    adjusted, running = [0.0] * len(p_values), 0.0
    for rank, index in enumerate(order):
        running = max(running, min(1.0, (m - rank) * float(p_values[index])))
        adjusted[index] = running
    return adjusted


@dataclass(frozen=True)
class Verdict:
    """A difference judged in a family of ``family_size`` hypotheses at the family-wise ``level`` (1: an exploratory
    comparison, unadjusted): its Holm-adjusted p-values, of a difference and of equivalence within ``±margin``."""

    difference: Difference
    family_size: int
    adjusted_p: float
    adjusted_tost_p: float
    level: float
    margin: float
    power: float

    @property
    def word(self) -> str:
        if not self.difference.measured:
            return NOT_ESTIMABLE
        if self.adjusted_p < self.level:
            return BETTER if self.difference.estimate > 0 else WORSE
        return EQUIVALENT if self.adjusted_tost_p < self.level else INCONCLUSIVE

    @property
    def confidence(self) -> float:
        """The confidence of the interval shown: the level Holm's adjustment implies for this hypothesis,
        ``level x p / p_Holm`` (level/(m - r + 1) at its step r, less where an earlier step failed), so that the
        interval excludes 0 exactly where the adjusted p-value is under the level."""
        p = self.difference.p_value
        if not math.isfinite(p) or p <= 0 or self.adjusted_p <= 0:
            return 1 - self.level / self.family_size
        return 1 - self.level * p / self.adjusted_p

    @property
    def interval(self) -> tuple[float, float]:
        return self.difference.interval(self.confidence)

    @property
    def detectable(self) -> float:
        """The minimum detectable difference at Holm's strictest step, level / m."""
        return self.difference.detectable(self.level / self.family_size, self.power)


def judged(
    differences: Sequence[Difference], family_size: int, level: float, margin: float | Sequence[float], power: float
) -> list[Verdict]:
    """``differences`` judged as ``family_size`` hypotheses (those not given count as untested, as does each not
    estimable), each against its equivalence ``margin`` (one for all, or one each)."""
    margins = [margin] * len(differences) if isinstance(margin, int | float) else list(margin)
    p_values = [d.p_value if d.measured else 1.0 for d in differences]
    tost = [d.tost_p(m) if d.measured else 1.0 for d, m in zip(differences, margins, strict=True)]
    adjusted, adjusted_tost = holm(p_values, family_size), holm(tost, family_size)
    return [
        Verdict(d, family_size, p, q, level, m, power)
        for d, p, q, m in zip(differences, adjusted, adjusted_tost, margins, strict=True)
    ]
