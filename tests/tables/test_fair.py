"""The fair table (``dml_core.tables.fair``): hand-computed means, spreads, intervals and verdicts from synthetic
results files; methods without results shown as not run; the validation-selected numbers, never a test-selected
one; fair results files selected by another rule, of another tier or outside the study refused, naming the file."""

import math

import pandas as pd
import pytest
from scipy import stats

from dml_core.errors import InputError
from dml_core.tables.fair import write_fair_tables
from dml_core.tables.fair_verdicts import BEATS, LOSES, TIES, welch_difference
from dml_core.tier import Tier
from tests.tables.fair_synthetic import PLANTED, fair_payload, write_fair_result, write_runs

# R@1 of seeds 0, 1, 2; MAP@R is R@1 - 20, NMI R@1 + 5, validation R@1 R@1 - 1 (fair_synthetic.fair_payload).
RUNS = {
    "damlrrm": [60.0, 62.0, 64.0],  # beats: +11.0, Welch df 2.94, t-interval [+6.8, +15.2]
    "anml": [51.0, 52.0, 53.0],  # ties: +1.0, df 4, t(0.975, 4) = 2.776: 1.0 ± 2.776 x sqrt(2/3) = [−1.3, +3.3]
    "gpw": [40.0, 41.0, 42.0],  # loses: −10.0 ± 2.27
    "drml": [70.0],  # one seed: no interval, ties
    "multi-similarity": [50.0, 51.0, 52.0],  # the best baseline
    "npair": [40.0, 41.0, 42.0],
}


def _page(tmp_path, tier=Tier.FULL):
    written = write_fair_tables(tmp_path / "results", tmp_path / "tables", tier)
    return written, written[0].read_text()


def _line(page: str, method: str) -> str:
    return next(line for line in page.splitlines() if line.startswith(f"| {method} |"))


def test_means_spreads_intervals_and_verdicts_are_the_hand_computed_ones(tmp_path):
    write_runs(tmp_path / "results", RUNS)
    written, page = _page(tmp_path)
    assert [p.name for p in written] == ["fair.md", "fair.csv", "fair.png"]
    assert "Best classic baseline (mean test R@1): **multi-similarity**, 51.0 ± 1.0." in page
    assert _line(page, "damlrrm") == (
        "| damlrrm | paper | 0, 1, 2 | 62.0 ± 2.0 | 42.0 ± 2.0 | 67.0 ± 2.0 | 61.0 ± 2.0 | +11.0 [+6.8, +15.2] | beats "
        "| +3.2 over N-pair (damlrrm Table 1; quoted row; multi-similarity not printed) |"
    )
    assert "| +1.0 [−1.3, +3.3] | ties | +1.9 over Multi-similarity loss (anml Table 4; quoted row) |" in page
    assert "| −10.0 [−12.3, −7.7] | loses | +3.8 over Multi-similarity loss (gpw Table 4; quoted row) |" in page
    drml = "| drml | paper | 0 | 70.0 | 50.0 | 75.0 | 69.0 | +19.0 (no interval: 1 seed) | ties |"
    assert _line(page, "drml").startswith(drml)
    assert _line(page, "multi-similarity").endswith("| — | reference | — |")
    assert "| −10.0 [−12.3, −7.7] | loses | — |" in _line(page, "npair")


def test_methods_and_datasets_without_results_are_shown_as_not_run(tmp_path):
    write_runs(tmp_path / "results", RUNS)
    _, page = _page(tmp_path)
    assert _line(page, "proxy-anchor") == "| proxy-anchor | baseline | not run | — | — | — | — | — | not run | — |"
    # cgml did not run, but what its paper printed is still shown (against the best printed baseline that ran)
    cgml = "| — | not run | +4.3 over N-Pair (cgml Table 5; multi-similarity not printed) |"
    assert _line(page, "cgml").endswith(cgml)
    assert "## Cars196\n\nNot run: no results of any method on Cars196." in page
    assert "## SOP\n\nNot run: no results of any method on SOP." in page


def test_the_numbers_are_the_validation_selected_evaluations_never_the_test_best(tmp_path):
    write_runs(tmp_path / "results", RUNS)
    _, page = _page(tmp_path)
    assert f"{PLANTED:.1f}" not in page  # every run's best TEST numbers are the planted ones


def test_the_csv_holds_the_same_numbers_at_full_precision(tmp_path):
    write_runs(tmp_path / "results", RUNS)
    frame = pd.read_csv(_page(tmp_path)[0][1])
    damlrrm = frame[(frame["dataset"] == "cub200") & (frame["method"] == "damlrrm")].iloc[0]
    assert (damlrrm["R@1 mean"], damlrrm["R@1 std"], damlrrm["n_seeds"], damlrrm["verdict"]) == (62.0, 2.0, 3, BEATS)
    assert damlrrm["difference"] == 11.0 and damlrrm["reference"] == "multi-similarity"
    assert damlrrm["claimed_over"] == "npair" and math.isclose(damlrrm["claimed_gain"], 3.2)
    assert list(frame[frame["dataset"] == "sop"]["verdict"].unique()) == ["not run"]


def test_the_protocol_is_read_from_the_results_and_a_difference_is_flagged(tmp_path):
    write_runs(tmp_path / "results", RUNS)
    _, page = _page(tmp_path)
    assert "images per step: 120; steps: 200; selection: best_val_r1; validation split: fraction 0.2, seed 0" in page
    assert "Not one protocol" not in page
    two_streams = {"name": "two_stream", "params": {"classes_per_batch": 20, "images_per_class": 2}}
    write_fair_result(tmp_path / "results", fair_payload("contrastive", "cub200", 0, 30.0, sampler=two_streams))
    _, page = _page(tmp_path)
    differs = "images per step differs: 120 (damlrrm, anml, gpw, drml, multi-similarity, npair); 80 (contrastive)."
    assert f"> **Not one protocol:** {differs}" in page


def test_a_fair_results_file_selected_on_the_test_classes_is_refused_naming_it(tmp_path):
    path = write_fair_result(tmp_path / "results", fair_payload("npair", "cub200", 0, 40.0, rule="best_r1"))
    with pytest.raises(InputError, match=r"field selection\.rule: expected 'best_val_r1'") as error:
        _page(tmp_path)
    assert str(error.value).startswith(f"{path}: ")


def test_a_run_outside_the_study_and_a_file_of_another_tier_are_refused(tmp_path):
    path = write_fair_result(tmp_path / "results", fair_payload("lifted", "cub200", 0, 40.0))
    with pytest.raises(InputError, match=r"field recipe\.id: expected <method>-<dataset>.*found 'lifted-cub200'"):
        _page(tmp_path)
    path.unlink()
    full = fair_payload("npair", "cub200", 0, 40.0)
    write_fair_result(tmp_path / "results", full)
    (tmp_path / "results" / "mini" / "fair").mkdir(parents=True)
    (tmp_path / "results" / "fair" / "npair-cub200-seed0.json").rename(tmp_path / "results/mini/fair/x-seed0.json")
    with pytest.raises(InputError, match="field tier: expected 'mini'"):
        _page(tmp_path, Tier.MINI)


def test_the_mini_tier_writes_its_own_page_with_its_banner(tmp_path):
    for method, values in RUNS.items():
        for seed, r1 in enumerate(values):
            payload = fair_payload(method, "cub200", seed, r1, tier=Tier.MINI)
            write_fair_result(tmp_path / "results", {**payload, "dataset": "embedded_mini"})
    written, page = _page(tmp_path, Tier.MINI)
    assert written[0] == tmp_path / "tables" / "mini" / "fair.md"
    assert "> **Mini tier: the whole protocol on the `embedded_mini` glyphs, NOT the study's numbers.**" in page
    assert "## CUB-200-2011 recipes (trained and tested on embedded_mini)" in page
    assert "| +11.0 [+6.8, +15.2] | beats |" in page
    assert not (tmp_path / "tables" / "fair.md").exists()


def test_no_results_at_all_gives_a_page_of_not_run_and_no_figure(tmp_path):
    written, page = _page(tmp_path)
    assert [p.name for p in written] == ["fair.md", "fair.csv"]
    assert page.count("Not run: no results of any method") == 3


def test_the_welch_interval_is_scipys_and_the_verdicts_follow_its_sign():
    ours, reference = [60.0, 62.0, 64.0, 61.0], [50.0, 51.0, 52.0]
    difference = welch_difference(ours, reference)
    peer = stats.ttest_ind(ours, reference, equal_var=False)
    low, high = peer.confidence_interval(0.95)
    assert math.isclose(difference.low, low) and math.isclose(difference.high, high)
    assert math.isclose(difference.degrees_of_freedom, peer.df)
    # df 4 by hand: variances 1 and 1 over 3 seeds each; t(0.975, 4) = 2.776445 from a t table
    by_hand = welch_difference([51.0, 52.0, 53.0], [50.0, 51.0, 52.0])
    assert by_hand.degrees_of_freedom == pytest.approx(4.0)
    assert by_hand.high - by_hand.estimate == pytest.approx(2.776445 * math.sqrt(2 / 3), abs=1e-5)
    assert [by_hand.verdict, difference.verdict, welch_difference(reference, ours).verdict] == [TIES, BEATS, LOSES]
    exact = welch_difference([52.0, 52.0], [51.0, 51.0])  # no spread on either side: the difference is exact
    assert (exact.low, exact.high, exact.verdict) == (1.0, 1.0, BEATS)
