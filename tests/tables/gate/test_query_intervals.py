"""A single seed's 95% bootstrap interval over its test queries, from the per-query file beside its results file:
in the long form and the cell, as the gate where it exceeds the tolerance, named by the nightly check either way;
several seeds keep their std; a missing, altered or mismatched per-query file is an error, never used."""

import math

import numpy as np
import pytest

from dml_core.errors import InputError
from dml_core.evaluation.bootstrap import bootstrap_intervals
from dml_core.evaluation.per_query import PerQuery
from dml_core.published import load_published
from dml_core.query_terms_file import companion_path, write_query_terms
from dml_core.results import write_results
from dml_core.tables.gate.check import check_paper
from dml_core.tables.gate.join import join, load_results_folder
from dml_core.tables.gate.known_gaps import KnownGaps
from dml_core.tables.gate.noise import BOOTSTRAP
from dml_core.tables.gate.query_intervals import QueryBootstrap
from dml_core.tables.gate.tolerances import Tolerances
from dml_core.tables.pages.cells import LEGEND
from dml_core.tables.pages.paper_tables import paper_shaped
from dml_core.tier import Tier
from tests.tables.synthetic import PAPER_KEY, results_payload, write_papers_dir, write_results_file

TOLERANCES = Tolerances(default=1.5)


def _ranks(n: int, r1: float, r2: float) -> np.ndarray:
    """First-positive ranks of n queries giving R@1 = r1 and R@2 = r2 (percent)."""
    at_0, at_1 = round(n * r1 / 100), round(n * (r2 - r1) / 100)
    return np.array([0] * at_0 + [1] * at_1 + [7] * (n - at_0 - at_1))


def _single_seed(tmp_path, n=2000, r1=55.0, r2=66.0, reported_r1=None, seed=0):
    """One seed's results file (R@1, R@2 and NMI = 60 at iteration 100) with its per-query file."""
    payload = results_payload(seed=seed, curve=[{"R@1": reported_r1 or r1, "R@2": r2, "NMI": 60.0}])
    path = tmp_path / "results" / PAPER_KEY / f"ours-cub200-seed{seed}.json"
    record = write_query_terms(path, {100: PerQuery.from_evaluation(_ranks(n, r1, r2))})
    return write_results(path, {**payload, "queries": record})


def _frame(tmp_path):
    paper = load_published(PAPER_KEY, write_papers_dir(tmp_path))
    loaded = load_results_folder(tmp_path / "results" / PAPER_KEY, tier=Tier.FULL)
    return join(paper, loaded, TOLERANCES, intervals=QueryBootstrap(loaded)).set_index("metric")


def test_a_single_seed_line_carries_its_bootstrap_interval_and_gates_with_it_where_wider(tmp_path):
    _single_seed(tmp_path)
    frame = _frame(tmp_path)
    expected = bootstrap_intervals({"R@1": 100.0 * (_ranks(2000, 55.0, 66.0) < 1)})["R@1"]
    r1 = frame.loc["R@1"]
    assert (r1["interval_low"], r1["interval_high"]) == pytest.approx((expected.low, expected.high))
    assert r1["interval_low"] < 55.0 < r1["interval_high"]
    # 2,000 queries at 55%: half-width about 1.96 * sqrt(0.55 * 0.45 / 2000) = 2.2 points, above the tolerance.
    assert r1["spread"] == pytest.approx(expected.half_width) and r1["spread"] > 1.5
    assert r1["spread_basis"] == BOOTSTRAP and r1["gate_basis"] == BOOTSTRAP and r1["gate"] == r1["spread"]
    assert frame.loc["R@2", "spread_basis"] == BOOTSTRAP
    # NMI is a clustering metric: not a mean over queries, no interval.
    nmi = frame.loc["NMI"]
    assert (
        nmi["spread_basis"] == "not measured" and math.isnan(nmi["interval_low"]) and nmi["gate_basis"] == "tolerance"
    )


def test_the_nightly_check_says_which_gate_it_used(tmp_path):
    _single_seed(tmp_path / "wide", n=2000, r1=52.0, r2=66.0)  # half-width ~2.2 > 1.5: the bootstrap gates
    _single_seed(tmp_path / "narrow", n=20000, r1=53.0, r2=66.0)  # half-width ~0.7 < 1.5: the tolerance gates
    wide = check_paper(PAPER_KEY, _frame(tmp_path / "wide").reset_index(), None, tier=Tier.FULL)
    narrow = check_paper(PAPER_KEY, _frame(tmp_path / "narrow").reset_index(), None, tier=Tier.FULL)
    assert [f.metric for f in wide] == ["R@1"] and [f.metric for f in narrow] == ["R@1"]
    assert "minus the 95% bootstrap half-width 2.1" in wide[0].reason
    assert "over queries (above the tolerance 1.5) (delta -3.10)" in wide[0].reason
    assert "minus tolerance 1.5 (above the 95% bootstrap half-width 0.6" in narrow[0].reason


def test_several_seeds_keep_mean_and_std_and_ignore_the_bootstrap(tmp_path):
    _single_seed(tmp_path, seed=0)
    _single_seed(tmp_path, seed=1, r1=57.0)
    r1 = _frame(tmp_path).loc["R@1"]
    assert r1["spread_basis"] == "std over 2 seeds" and math.isnan(r1["interval_low"])


def test_the_cell_shows_the_interval_and_the_legend_says_what_it_is(tmp_path):
    _single_seed(tmp_path)
    frame = _frame(tmp_path).reset_index()
    paper = load_published(PAPER_KEY, tmp_path / "papers")
    table = paper.tables[0]
    shown = paper_shaped(table, frame[frame["table"] == table.id], KnownGaps(paper=PAPER_KEY), tmp_path, tmp_path)
    ours = shown[shown["method"] == "OURS"].iloc[0]
    r1 = frame[frame["metric"] == "R@1"].iloc[0]
    assert ours["R@1"] == f"55.1 → 55.0 [{r1['interval_low']:.1f}, {r1['interval_high']:.1f}] (−0.1) ✓"
    assert ours["NMI"] == "60.0 → 60.0 (+0.0) ✓"  # one seed, no interval for a clustering metric
    assert ours["runs"] == "1 seed"
    assert "95% bootstrap interval over the test queries, [low, high]" in LEGEND


def test_a_missing_altered_or_foreign_per_query_file_is_an_error_not_a_silent_skip(tmp_path):
    path = _single_seed(tmp_path / "missing")
    companion_path(path).unlink()
    with pytest.raises(InputError, match=r"ours-cub200-seed0.json: field queries.file: expected the per-query file"):
        _frame(tmp_path / "missing")

    path = _single_seed(tmp_path / "altered")
    data = bytearray(companion_path(path).read_bytes())
    data[-30] ^= 0xFF
    companion_path(path).write_bytes(bytes(data))
    with pytest.raises(InputError, match=r"ours-cub200-seed0.queries.npz: sha256 .* \(field queries.sha256\)"):
        _frame(tmp_path / "altered")

    # Consistent bytes, but terms that do not average to the reported number: not this run's.
    _single_seed(tmp_path / "foreign", r1=55.0, reported_r1=56.0)
    with pytest.raises(InputError, match=r"give R@1 = 55.0000, but ours-cub200-seed0.json reports 56.0000"):
        _frame(tmp_path / "foreign")


def test_results_files_without_per_query_data_stay_unmeasured(tmp_path):
    write_results_file(tmp_path / "results", results_payload())
    assert _frame(tmp_path).loc["R@1", "spread_basis"] == "not measured"
