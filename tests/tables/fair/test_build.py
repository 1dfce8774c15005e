"""The fair table (``dml_core.tables.fair``): hand-computed means, spreads, intervals and verdicts from synthetic
results files, paired where two methods trained on the same batches and Welch's where not, Holm-corrected over the
page; the control's same-batch comparisons; methods without results shown as not run; the validation-selected
numbers, never a test-selected one, and the other validation rule's picks beside them; the validation search;
fair results files selected on the test classes, of another tier or outside the study refused, naming the file."""

import math

import pandas as pd
import pytest
from scipy import stats

from dml_core.errors import InputError
from dml_core.tables.fair.build import build_fair_tables, write_fair_tables
from dml_core.tables.fair.verdicts import BEATS, LOSES, PAIRED, TIES, WELCH
from dml_core.tier import Tier
from tests.tables.fair.synthetic import PLANTED, fair_payload, write_fair_result, write_runs

TWO_STREAMS = {"name": "two_stream", "params": {"classes_per_batch": 15, "images_per_class": 4}}
PAIRED_DRAWS = {"name": "paired", "params": {"classes_per_batch": 15, "images_per_class": 4}}
# R@1 of seeds 0, 1, 2; MAP@R is R@1 - 20, NMI R@1 + 5, validation R@1 R@1 - 1 (synthetic.fair_payload). Every
# run but damlrrm's (two streams) trains on the same PK batches at a seed, so its difference is paired.
RUNS = {
    "anml": [51.0, 52.5, 53.0],  # paired: differences 1, 1.5, 1: +1.17 ± 4.303 x 0.2887 / sqrt(3) = [+0.4, +1.9]
    "gpw": [40.0, 41.0, 42.5],  # paired: -10, -10, -9.5: [-10.6, -9.1]
    "drml": [70.0],  # one common seed: no interval, ties
    "multi-similarity": [50.0, 51.0, 52.0],  # the best baseline
    "npair": [40.0, 41.0, 42.0],  # the same difference, -10, at every seed: no spread, no interval, ties
}
DAMLRRM = [60.0, 62.0, 64.0]  # Welch against the best baseline: +11.0, df 2.94, [+6.8, +15.2]


def _write(results_root, tier=Tier.FULL):
    write_runs(results_root, RUNS, tier=tier)
    for seed, r1 in enumerate(DAMLRRM):
        write_fair_result(results_root, fair_payload("damlrrm", "cub200", seed, r1, sampler=TWO_STREAMS, tier=tier))


def _page(tmp_path, tier=Tier.FULL):
    written = write_fair_tables(tmp_path / "results", tmp_path / "tables", tier)
    return written, written[0].read_text()


def _line(page: str, method: str) -> str:
    return next(line for line in page.splitlines() if line.startswith(f"| {method} |"))


def test_means_spreads_intervals_and_verdicts_are_the_hand_computed_ones(tmp_path):
    _write(tmp_path / "results")
    written, page = _page(tmp_path)
    assert [p.name for p in written] == ["fair.md", "fair.csv", "fair.png"]
    assert "Best classic baseline (mean test R@1): **multi-similarity**, 51.0 ± 1.0." in page
    # Holm over the three measured verdicts: p = 0.00029 (gpw) x 3, 0.0037 (damlrrm) x 2, 0.0198 (anml) x 1
    assert _line(page, "damlrrm") == (
        "| damlrrm | paper | 15×4 + 60 shuffled | 0, 1, 2 | 62.0 ± 2.0 | 42.0 ± 2.0 | 67.0 ± 2.0 | 61.0 ± 2.0 "
        "| +11.0 [+6.8, +15.2] | Welch (batches differ) | 0.004 (Holm 0.007) | beats "
        "| +3.2 over N-pair (damlrrm Table 1; quoted row; multi-similarity not printed) |"
    )
    assert "| +1.2 [+0.4, +1.9] | paired (same batches) | 0.020 (Holm 0.020) | beats |" in _line(page, "anml")
    assert "| −9.8 [−10.6, −9.1] | paired (same batches) | <0.001 (Holm <0.001) | loses |" in _line(page, "gpw")
    # paired over the one seed both ran: 70.0 - 50.0 (seed 0's), not the difference of the means (+19.0)
    drml = "| drml | paper | PK 30×4 | 0 | 70.0 | 50.0 | 75.0 | 69.0 | +20.0 (no interval: 1 seed) | paired"
    assert _line(page, "drml").startswith(drml) and "| — | ties |" in _line(page, "drml")
    assert _line(page, "multi-similarity").endswith("| — | — | — | reference | — |")
    assert "| −10.0 (no interval: no spread) | paired (same batches) | — | ties | — |" in _line(page, "npair")
    assert "The verdicts are Holm-corrected over the 3 on this page that have an interval." in page


def test_two_methods_at_one_seed_on_the_pk_sampler_get_the_paired_interval(tmp_path):
    ours, reference = [51.0, 52.5, 53.0], [50.0, 51.0, 52.0]
    write_runs(tmp_path / "results", {"anml": ours, "multi-similarity": reference})
    section = build_fair_tables(tmp_path / "results", Tier.FULL).sections[0]
    difference = section.differences["anml"]
    assert difference.test == PAIRED
    low, high = stats.ttest_rel(ours, reference).confidence_interval(0.95)
    assert (difference.low, difference.high) == pytest.approx((low, high))
    # by hand: differences 1, 1.5, 1; sd 0.2887; t(0.975, 2) = 4.302653 from a t table
    assert difference.high - difference.estimate == pytest.approx(4.302653 * 0.288675 / math.sqrt(3), abs=1e-5)
    # Welch's interval on the same numbers would be far wider: pairing takes out the seed both runs share
    welch = stats.ttest_ind(ours, reference, equal_var=False).confidence_interval(0.95)
    assert welch.high - welch.low > 3 * (high - low)


def test_another_sampler_or_another_seed_makes_the_comparison_welchs(tmp_path):
    ours, reference = [60.0, 62.0, 64.0, 61.0], [50.0, 51.0, 52.0]
    for seed, r1 in enumerate(ours):
        write_fair_result(tmp_path / "results", fair_payload("cgml", "cub200", seed, r1, sampler=PAIRED_DRAWS))
    write_runs(tmp_path / "results", {"multi-similarity": reference})
    difference = build_fair_tables(tmp_path / "results", Tier.FULL).sections[0].differences["cgml"]
    peer = stats.ttest_ind(ours, reference, equal_var=False)
    assert difference.test == WELCH
    assert (difference.low, difference.high) == pytest.approx(tuple(peer.confidence_interval(0.95)))
    assert difference.degrees_of_freedom == pytest.approx(peer.df) and difference.p_value == pytest.approx(peer.pvalue)


def test_two_zero_spreads_on_the_page_give_no_interval_and_ties(tmp_path):
    write_runs(tmp_path / "results", {"anml": [55.0, 55.0, 55.0], "multi-similarity": [50.0, 50.0, 50.0]})
    for seed in range(3):  # Welch: cgml's batches differ, and both sides have no spread
        write_fair_result(tmp_path / "results", fair_payload("cgml", "cub200", seed, 60.0, sampler=PAIRED_DRAWS))
    section = build_fair_tables(tmp_path / "results", Tier.FULL).sections[0]
    for method, test in (("anml", PAIRED), ("cgml", WELCH)):
        difference = section.differences[method]
        assert (difference.test, difference.measured, difference.verdict) == (test, False, TIES)
    assert "| +10.0 (no interval: no spread) | Welch (batches differ) | — | ties |" in _page(tmp_path)[1]


def test_holm_turns_a_verdict_that_holds_alone_into_ties_among_many(tmp_path):
    # each alone: p = 0.0198 (anml's differences of RUNS); five of them: 5 x 0.0198 = 0.099 for the smallest
    reference = [50.0, 51.0, 52.0]
    runs = {method: [51.0, 52.5, 53.0] for method in ("damlrrm", "anml", "gpw", "drml", "cgml")}
    write_runs(tmp_path / "results", {**runs, "multi-similarity": reference})
    tables = build_fair_tables(tmp_path / "results", Tier.FULL)
    differences = tables.sections[0].differences
    assert {m: d.p_value for m, d in differences.items()} == pytest.approx(dict.fromkeys(runs, 0.019804), abs=1e-6)
    assert {m: d.adjusted_p for m, d in differences.items()} == pytest.approx(dict.fromkeys(runs, 0.099020), abs=1e-6)
    assert {d.verdict for d in differences.values()} == {TIES}
    assert all(d.low > 0 for d in differences.values())  # each uncorrected interval excludes 0


def test_cgmls_control_compares_like_with_like(tmp_path):
    cgml, control, multi_similarity = [45.0, 47.5, 46.0], [44.0, 46.0, 45.5], [50.0, 51.0, 52.0]
    for seed in range(3):
        for method, values in (("cgml", cgml), ("multi-similarity-paired", control)):
            payload = fair_payload(method, "cub200", seed, values[seed], sampler=PAIRED_DRAWS)
            write_fair_result(tmp_path / "results", payload)
    write_runs(tmp_path / "results", {"multi-similarity": multi_similarity})
    _, page = _page(tmp_path)
    section = build_fair_tables(tmp_path / "results", Tier.FULL).sections[0]
    term, makeup = section.controls
    assert (term.ours.method, term.reference.method) == ("cgml", "multi-similarity-paired")
    assert term.difference.test == PAIRED
    assert term.difference.estimate == pytest.approx(1.0)  # differences 1, 1.5, 0.5
    assert (makeup.ours.method, makeup.reference.method, makeup.difference.test) == (
        "multi-similarity-paired", "multi-similarity", WELCH)  # fmt: skip
    assert "multi-similarity-paired" not in section.differences  # a control is not judged against the best baseline
    assert "| cgml − multi-similarity-paired | cgml's own term (the same batches) | 0, 1, 2 | +1.0 [" in page
    assert "| multi-similarity-paired − multi-similarity | the batch makeup (" in page
    assert _line(page, "multi-similarity-paired").startswith("| multi-similarity-paired | control | 2 draws of 15×4 |")


def test_methods_and_datasets_without_results_are_shown_as_not_run(tmp_path):
    _write(tmp_path / "results")
    _, page = _page(tmp_path)
    assert _line(page, "proxy-anchor") == (
        "| proxy-anchor | baseline | — | not run | — | — | — | — | — | — | — | not run | — |"
    )
    # cgml did not run; its paper printed no CUB pair (the note below the table says why)
    assert _line(page, "cgml").endswith("| — | not run | none printed (see below) |")
    assert "- cgml: The fair recipe runs CGML(MS)" in page
    assert "## Cars196\n\nNot run: no results of any method on Cars196." in page
    assert "## SOP\n\nNot run: no results of any method on SOP." in page


def test_the_numbers_are_the_validation_selected_evaluations_never_the_test_best(tmp_path):
    _write(tmp_path / "results")
    _, page = _page(tmp_path)
    assert f"{PLANTED:.1f}" not in page  # every run's best TEST numbers are the planted ones


def test_the_other_validation_rules_picks_are_shown_from_the_same_runs(tmp_path):
    # validation MAP@R picks the planted first evaluation where the second's validation MAP@R is below 0.5
    write_runs(tmp_path / "results", {"multi-similarity": [50.0, 51.0, 52.0]})
    write_fair_result(tmp_path / "results", fair_payload("npair", "cub200", 0, 40.0, validation_r1=20.3))
    _, page = _page(tmp_path)
    assert "Picked on validation MAP@R instead (`best_val_map_r`, MLRC's selection metric)" in page
    assert "| npair | 40.0 | 99.0 | 99.0 | 1 of 1 |" in page
    assert "| multi-similarity | 51.0 ± 1.0 | 51.0 ± 1.0 | 31.0 ± 1.0 | 0 of 3 |" in page


def test_the_validation_search_picks_each_methods_point_on_validation_never_on_test(tmp_path):
    root = tmp_path / "results"
    _write(root)
    lower, higher = "fair.search-point=lower", "fair.search-point=higher"
    for seed in range(3):  # anml's lower point: best validation, worst test; its higher point: best test only
        write_fair_result(root, fair_payload("anml", "cub200", seed, 30.0, variant=lower, validation_r1=80.0))
        write_fair_result(root, fair_payload("anml", "cub200", seed, 90.0, variant=higher, validation_r1=10.0))
        write_fair_result(root, fair_payload("npair", "cub200", seed, 60.0 + seed, variant=lower))
    tables = build_fair_tables(root, Tier.FULL)
    (search,) = tables.searches
    chosen = {method.method: method.chosen for method in search.methods}
    assert chosen == {**dict.fromkeys(["damlrrm", "gpw", "drml", "multi-similarity"], "paper"), "anml": "lower",
                      "npair": "lower"}  # fmt: skip
    assert search.section.best.method == "npair"  # the picked points are ranked again: npair's 61.0 leads
    assert search.section.line("anml").values("R@1") == [30.0, 30.0, 30.0]
    assert search.section.line("damlrrm").values("R@1") == DAMLRRM  # not searched: its paper's point
    page = _page(tmp_path)[1]
    assert "### Validation search on CUB-200-2011 (reading `fair.search-point`)" in page
    assert "| anml | paper 51.2 (3) · lower 80.0 (3) · higher 10.0 (3) | lower |" in page
    # the search's verdicts are in the page's Holm family: five in the table, five among the picked points
    assert len(tables.all_differences()) == 5 + 5


def test_runs_of_other_readings_are_named_and_left_out(tmp_path):
    _write(tmp_path / "results")
    write_fair_result(tmp_path / "results", fair_payload("npair", "cub200", 0, 10.0, variant="precision=bf16"))
    write_fair_result(tmp_path / "results", fair_payload("npair", "cub200", 0, 10.0, variant="selection=best-r1",
                                                         rule="best_r1"))  # fmt: skip
    _, page = _page(tmp_path)
    assert "Not in these tables: the results files of runs under other readings: `precision=bf16` (1), " in page
    assert "| npair | baseline | PK 30×4 | 0, 1, 2 | 41.0 ± 1.0 |" in page


def test_the_csv_holds_the_same_numbers_at_full_precision(tmp_path):
    _write(tmp_path / "results")
    frame = pd.read_csv(_page(tmp_path)[0][1])
    damlrrm = frame[(frame["dataset"] == "cub200") & (frame["method"] == "damlrrm")].iloc[0]
    assert (damlrrm["R@1 mean"], damlrrm["R@1 std"], damlrrm["n_seeds"], damlrrm["verdict"]) == (62.0, 2.0, 3, BEATS)
    assert damlrrm["difference"] == 11.0 and damlrrm["reference"] == "multi-similarity"
    assert (damlrrm["interval"], damlrrm["p_holm"]) == (WELCH, pytest.approx(2 * 0.00365996, abs=1e-7))
    assert damlrrm["claimed_over"] == "npair" and math.isclose(damlrrm["claimed_gain"], 3.2)
    gpw = frame[(frame["dataset"] == "cub200") & (frame["method"] == "gpw")].iloc[0]
    assert (gpw["interval"], gpw["verdict"]) == (PAIRED, LOSES)
    assert frame[frame["method"] == "npair"].iloc[0]["interval"] == "none (no spread)"
    assert list(frame[frame["dataset"] == "sop"]["verdict"].unique()) == ["not run"]


def test_the_protocol_is_read_from_the_results_and_a_difference_is_flagged(tmp_path):
    write_runs(tmp_path / "results", RUNS)
    _, page = _page(tmp_path)
    held_out = "validation split: fraction 0.2, seed 0, 20 classes held out (sha256 cccccccccccc)"
    assert f"images per step: 120; steps: 200; selection: best_val_r1; {held_out}; loss hyper-parameters: " in page
    assert "loss hyper-parameters: each method's paper's, which the papers chose on their test classes." in page
    assert "Not one protocol" not in page
    two_streams = {"name": "two_stream", "params": {"classes_per_batch": 20, "images_per_class": 2}}
    write_fair_result(tmp_path / "results", fair_payload("contrastive", "cub200", 0, 30.0, sampler=two_streams))
    _, page = _page(tmp_path)
    differs = "images per step differs: 120 (anml, gpw, drml, multi-similarity, npair); 80 (contrastive)."
    assert f"> **Not one protocol:** {differs}" in page


def test_a_fair_results_file_selected_on_the_test_classes_is_refused_naming_it(tmp_path):
    path = write_fair_result(tmp_path / "results", fair_payload("npair", "cub200", 0, 40.0, rule="best_r1"))
    with pytest.raises(InputError, match=r"field selection\.rule: expected 'best_val_r1' or 'best_val_map_r'") as error:
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
    assert "| +1.2 [+0.4, +1.9] | paired (same batches) |" in page
    assert not (tmp_path / "tables" / "fair.md").exists()


def test_no_results_at_all_gives_a_page_of_not_run_and_no_figure(tmp_path):
    written, page = _page(tmp_path)
    assert [p.name for p in written] == ["fair.md", "fair.csv"]
    assert page.count("Not run: no results of any method") == 3


def test_the_verdicts_follow_the_sign_of_a_firm_difference():
    from dml_core.tables.fair.verdicts import welch_difference

    ours, reference = [60.0, 62.0, 64.0, 61.0], [50.0, 51.0, 52.0]
    assert [welch_difference(ours, reference).verdict, welch_difference(reference, ours).verdict] == [BEATS, LOSES]
    assert welch_difference([51.0, 52.0, 53.0], [50.0, 51.0, 52.0]).verdict == TIES  # df 4: [-1.3, +3.3]
