"""The fair table's statistics (``dml_core.tables.fair.verdicts``): two zero spreads give no interval and no firm
verdict."""

from dml_core.tables.fair.verdicts import TIES, welch_difference


def test_two_zero_spreads_give_no_interval_and_no_firm_verdict():
    # every seed of both methods gave the same number: nothing measures the spread, so nothing bounds the difference
    difference = welch_difference([52.0, 52.0, 52.0], [51.0, 51.0, 51.0])
    assert not difference.measured
    assert difference.low < difference.estimate < difference.high
    assert difference.verdict == TIES
