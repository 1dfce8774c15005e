"""The fair page's statistics (``dml_core.tables.fair.verdicts``): the t-tests agree with scipy's; the verdict words
follow the data (better / worse past Holm's adjustment, equivalent only by TOST against the margin, inconclusive
otherwise, not estimable without a spread); Holm runs over the declared family, run or not; the interval shown
excludes 0 exactly where the adjusted p-value is under the level; the minimum detectable difference is the formula
docs/fair.md states, checked against t-table values."""

import math

import numpy as np
import pytest
from scipy import stats

from dml_core.tables.fair.verdicts import (
    BETTER,
    EQUIVALENT,
    INCONCLUSIVE,
    NOT_ESTIMABLE,
    WORSE,
    holm,
    judged,
    paired_difference,
    welch_difference,
)

REFERENCE = {0: 50.0, 1: 51.0, 2: 52.0, 3: 50.5, 4: 51.5}


def _paired(differences: list[float]):
    return paired_difference({seed: REFERENCE[seed] + d for seed, d in enumerate(differences)}, REFERENCE)


def _word(difference, family_size=1, margin=1.0) -> str:
    return judged([difference], family_size, 0.05, margin, 0.8)[0].word


def test_the_paired_and_welch_tests_agree_with_scipys():
    ours, reference = [60.0, 62.0, 64.5, 61.0], [50.0, 51.0, 52.0, 49.0]
    paired = paired_difference(dict(enumerate(ours)), dict(enumerate(reference)))
    peer = stats.ttest_rel(ours, reference)
    assert (paired.p_value, paired.degrees_of_freedom) == pytest.approx((peer.pvalue, peer.df))
    assert paired.interval(0.95) == pytest.approx(tuple(peer.confidence_interval(0.95)))
    welch = welch_difference(ours, reference[:3])
    peer = stats.ttest_ind(ours, reference[:3], equal_var=False)
    assert (welch.p_value, welch.degrees_of_freedom) == pytest.approx((peer.pvalue, peer.df))
    assert welch.interval(0.99) == pytest.approx(tuple(peer.confidence_interval(0.99)))


def test_a_clear_difference_is_better_or_worse_by_its_sign():
    ahead = {seed: value + 11.0 + 0.5 * (seed % 2) for seed, value in REFERENCE.items()}
    assert _word(paired_difference(ahead, REFERENCE)) == BETTER
    assert _word(paired_difference(REFERENCE, ahead)) == WORSE


def test_equivalent_only_where_both_one_sided_tests_exclude_the_margin():
    # differences centred on 0 with a small spread: no difference, and both one-sided tests exclude +-1
    tight = _paired([0.1, -0.1, 0.05, -0.05, 0.0])
    assert _word(tight) == EQUIVALENT
    # by hand: mean 0, sd 0.0791, se 0.0354, df 4: t = (0 + 1) / 0.0354 = 28.3, one-sided p ~ 5e-6
    assert tight.tost_p(1.0) == pytest.approx(stats.t.sf(1.0 / (0.0790569 / math.sqrt(5)), 4), rel=1e-4)
    # the same centre with a wide spread is no evidence of equivalence: inconclusive, never "ties"
    wide = _paired([3.0, -3.0, 2.0, -2.5, 0.5])
    assert _word(wide) == INCONCLUSIVE
    # and a margin narrower than the spread allows is not met either
    assert _word(tight, margin=0.01) == INCONCLUSIVE


def test_no_spread_is_not_estimable_even_where_the_difference_is_constant_and_nonzero():
    constant = paired_difference({0: 52.0, 1: 53.0, 2: 55.0}, {0: 51.0, 1: 52.0, 2: 54.0})
    assert (constant.unmeasured, _word(constant)) == ("no spread", NOT_ESTIMABLE)
    assert _word(welch_difference([52.0, 52.0, 52.0], [51.0, 51.0, 51.0])) == NOT_ESTIMABLE
    assert _word(welch_difference([52.0], [51.0, 50.0])) == NOT_ESTIMABLE  # one seed on a side
    verdict = judged([constant], 1, 0.05, 1.0, 0.8)[0]
    assert verdict.interval == (-math.inf, math.inf) and math.isnan(verdict.detectable)


def test_holm_runs_over_the_declared_family_whatever_ran():
    difference = _paired([1.0, 1.5, 1.0, 1.2, 0.8])  # p = 0.00058 alone
    p = difference.p_value
    alone, among_ten = (judged([difference], m, 0.05, 1.0, 0.8)[0] for m in (1, 10))
    assert alone.adjusted_p == pytest.approx(p) and among_ten.adjusted_p == pytest.approx(10 * p)
    # a not estimable member of the family counts as untested: it does not shrink the family
    constant = paired_difference({0: 52.0, 1: 53.0}, {0: 51.0, 1: 52.0})
    two = judged([difference, constant], 10, 0.05, 1.0, 0.8)
    assert two[0].adjusted_p == pytest.approx(10 * p)
    assert holm([0.01, 0.04, 0.03], family_size=4) == pytest.approx([0.04, 0.09, 0.09])
    with pytest.raises(ValueError, match="family"):
        holm([0.01, 0.02], family_size=1)


def test_the_interval_shown_excludes_zero_exactly_where_the_adjusted_p_value_is_under_the_level():
    rng = np.random.default_rng(0)
    differences = [_paired(list(rng.normal(shift, 1.0, 5))) for shift in np.linspace(-2.5, 2.5, 12)]
    for verdict in judged(differences, 20, 0.05, 1.0, 0.8):
        low, high = verdict.interval
        excludes = low > 0 or high < 0
        assert excludes == (verdict.adjusted_p < 0.05) == (verdict.word in (BETTER, WORSE))


def test_the_minimum_detectable_difference_is_the_t_table_formula():
    difference = _paired([1.0, 3.0, 2.0])  # sd 1, se 1 / sqrt(3), df 2
    verdict = judged([difference], 1, 0.05, 1.0, 0.8)[0]
    # t table, df 2: t(0.975) = 4.303, t(0.80) = 1.061
    assert verdict.detectable == pytest.approx((4.303 + 1.061) / math.sqrt(3), abs=1e-3)
    # in a family of 10: Holm's strictest step, 0.005 two-sided: t(0.9975, df 2) = 14.089
    assert judged([difference], 10, 0.05, 1.0, 0.8)[0].detectable == pytest.approx((14.089 + 1.061) / math.sqrt(3),
                                                                                    abs=1e-3)  # fmt: skip
