"""The percentile bootstrap over queries: hand checks (all hits: zero width; a 50/50 split: the binomial width),
a brute-force resampling oracle, determinism, and the same draws for every metric."""

import numpy as np
import pytest

from dml_core.errors import InputError
from dml_core.evaluation.bootstrap import Interval, bootstrap_intervals


def test_queries_that_all_hit_give_a_zero_width_interval():
    assert bootstrap_intervals({"R@1": np.full(500, 100.0), "MAP@R": np.full(500, 37.5)}) == {
        "R@1": Interval(100.0, 100.0),
        "MAP@R": Interval(37.5, 37.5),
    }


def test_a_half_and_half_split_gives_the_binomial_width():
    # Recall@1 of 50% over n queries: the mean of n Bernoulli(1/2) draws, standard error 50/sqrt(n) points; the
    # 95% interval is about +-1.96 standard errors.
    n = 4000
    interval = bootstrap_intervals({"R@1": np.repeat([0.0, 100.0], n // 2)})["R@1"]
    assert interval.half_width == pytest.approx(1.96 * 50 / np.sqrt(n), rel=0.1)
    assert interval.low < 50.0 < interval.high
    assert (interval.high - 50.0) == pytest.approx(50.0 - interval.low, rel=0.2)


def test_matches_resampling_query_by_query():
    values = np.random.default_rng(3).random(37) * 100
    got = bootstrap_intervals({"MAP@R": values}, resamples=300, seed=11)["MAP@R"]
    # The same draws, taken one resample at a time: the mean of the drawn queries, then the 2.5/97.5 percentiles.
    draws = np.random.default_rng(11).integers(0, len(values), size=(300, len(values)), dtype=np.uint32)
    low, high = np.percentile(values[draws].mean(axis=1), [2.5, 97.5])
    assert (got.low, got.high) == pytest.approx((low, high), abs=1e-9)


def test_seeded_the_same_whatever_other_metrics_ride_along():
    rng = np.random.default_rng(0)
    r1, ap = 100.0 * (rng.random(300) < 0.6), 100 * rng.random(300)
    alone = bootstrap_intervals({"R@1": r1})
    together = bootstrap_intervals({"R@1": r1, "MAP@R": ap})
    assert alone["R@1"] == together["R@1"] == bootstrap_intervals({"R@1": r1})["R@1"]
    assert bootstrap_intervals({"R@1": r1}, seed=1)["R@1"] != alone["R@1"]


def test_bad_input_is_one_clear_error():
    with pytest.raises(InputError, match=r"expected one non-empty \(n,\) array per metric"):
        bootstrap_intervals({"R@1": np.ones(3), "RP": np.ones(4)})
    with pytest.raises(InputError, match="found NaN"):
        bootstrap_intervals({"RP": np.array([1.0, np.nan])})
    assert bootstrap_intervals({}) == {}
