"""The fair page (``dml_core.tables.fair``) from synthetic results files: hand-computed means, spreads and verdicts;
the reference picked on validation, never on test; Holm over the family reproduce/fair/study.yaml declares and
nothing else, every other comparison exploratory and unadjusted; a run whose pick is its untrained evaluation
flagged and out of every comparison; paired only where the two runs shared batches and code; the mini tier compares
only where its reference clears the learning bar; each printed gain beside this study's difference from the same
baseline; methods without results shown as not run; the validation-selected numbers, never a test-selected one, and
the other validation rule's picks beside them; the validation search; fair results files selected on the test
classes, of another tier or outside the study refused, naming the file."""

import math

import pandas as pd
import pytest
import yaml

from dml_core.errors import InputError
from dml_core.output_paths import RECIPES_DIR
from dml_core.tables.fair.build import build_fair_tables, write_fair_tables
from dml_core.tables.fair.verdicts import BETTER, INCONCLUSIVE, NOT_ESTIMABLE, PAIRED, WELCH, WORSE
from dml_core.tier import Tier
from tests.tables.fair.synthetic import PLANTED, fair_payload, write_fair_result, write_runs

TWO_STREAMS = {"name": "two_stream", "params": {"classes_per_batch": 15, "images_per_class": 4}}
PAIRED_DRAWS = {"name": "paired", "params": {"classes_per_batch": 15, "images_per_class": 4}}
# R@1 of seeds 0, 1, 2; MAP@R is R@1 - 20, NMI R@1 + 5, validation R@1 R@1 - 1 (synthetic.fair_payload). Every
# run but damlrrm's (two streams) trains on the same PK batches at a seed under one commit, so its difference is
# paired. MAP@R differences are the R@1 ones: each method's two hypotheses have the same p-value.
RUNS = {
    "anml": [51.0, 52.5, 53.0],  # paired: differences 1, 1.5, 1: t = 7.0, df 2, p = 0.0198
    "gpw": [40.0, 41.0, 42.5],  # paired: -10, -10, -9.5: p = 0.000287
    "drml": [70.0],  # one common seed: not estimable
    "multi-similarity": [50.0, 51.0, 52.0],  # the reference: the best validation R@1 of the baselines
    "npair": [40.0, 41.0, 42.0],  # the same difference, -10, at every seed: no spread, not estimable
}
DAMLRRM = [60.0, 62.0, 64.0]  # Welch against the reference: +11.0, df 2.94, p = 0.00366
FAMILY = 20  # reproduce/fair/study.yaml: 5 paper methods x 2 data sets x 2 metrics at full scale


def _write(results_root, tier=Tier.FULL):
    write_runs(results_root, RUNS, tier=tier)
    for seed, r1 in enumerate(DAMLRRM):
        write_fair_result(results_root, fair_payload("damlrrm", "cub200", seed, r1, sampler=TWO_STREAMS, tier=tier))


def _page(tmp_path, tier=Tier.FULL):
    written = write_fair_tables(tmp_path / "results", tmp_path / "tables", tier)
    return written, written[0].read_text()


def _line(page: str, start: str) -> str:
    return next(line for line in page.splitlines() if line.startswith(start))


def _hypothesis(section, method: str, metric: str = "R@1"):
    return next(c for c in section.hypotheses if c.ours.method == method and c.metric == metric)


def test_the_runs_table_shows_means_spreads_and_picked_steps(tmp_path):
    _write(tmp_path / "results")
    written, page = _page(tmp_path)
    assert [p.name for p in written] == ["fair.md", "fair.csv", "fair.png"]
    assert _line(page, "| damlrrm | paper |") == (
        "| damlrrm | paper | 15×4 + 60 shuffled | 0, 1, 2 | 200, 200, 200 | 62.0 ± 2.0 | 42.00 ± 2.00 | 67.0 ± 2.0 "
        "| 61.0 ± 2.0 |"
    )
    assert _line(page, "| multi-similarity | reference |").startswith("| multi-similarity | reference | PK 30×4 |")
    assert "Reference (the classic baseline with the best mean validation R@1): **multi-similarity**, validation " \
        "R@1 50.0 ± 1.0, test R@1 51.0 ± 1.0." in page  # fmt: skip


def test_the_declared_hypotheses_get_the_hand_computed_words_under_holm_over_the_family(tmp_path):
    _write(tmp_path / "results")
    tables = build_fair_tables(tmp_path / "results", Tier.FULL)
    section = tables.sections[0]
    assert tables.family_size == FAMILY
    # measured: gpw's two (p 0.000287), damlrrm's two (0.00366), anml's two (0.0198); the other 14 count as 1
    expected = {"gpw": (20 * 0.00028715, WORSE), "damlrrm": (18 * 0.00365996, INCONCLUSIVE),
                "anml": (16 * 0.01980394, INCONCLUSIVE)}  # fmt: skip
    for method, (adjusted, word) in expected.items():
        for metric in ("R@1", "MAP@R"):
            verdict = _hypothesis(section, method, metric).verdict
            assert (verdict.adjusted_p, verdict.word) == (pytest.approx(adjusted, rel=1e-4), word), (method, metric)
    assert _hypothesis(section, "drml").verdict.word == NOT_ESTIMABLE  # one common seed
    assert _hypothesis(section, "gpw").verdict.confidence == pytest.approx(1 - 0.05 / 20)  # Holm's first step
    page = _page(tmp_path)[1]
    # by hand: se 0.2887 / sqrt(3) = 0.1667, df 2; t(1 - 0.0025 / 2) = 19.96 (99.75%, Holm's first step), so
    # -9.83 +- 3.33; detectable at level / 20 with 80% power: (19.96 + t(0.8) 1.061) x 0.1667 = 3.50
    assert _line(page, "| gpw | R@1 |") == (
        "| gpw | R@1 | 0, 1, 2 | −9.8 [−13.2, −6.5] (99.75%) | paired (same batches and code) "
        "| <0.001 (Holm 0.006) | 1.000 (Holm 1.000) | 3.5 | worse |"
    )
    assert _line(page, "| drml | R@1 |").endswith("| +20.0 (no interval: 1 seed) | paired (same batches and code) "
                                                  "| — | — | — | not estimable |")  # fmt: skip
    assert "Holm over the family of 20" in page


def test_holm_runs_over_the_declared_family_only(tmp_path):
    # the same hypotheses with and without exploratory comparisons beside them (baselines, cgml's control, a
    # validation search): their adjusted p-values do not move, and the exploratory ones are each alone
    write_runs(tmp_path / "results", {"anml": RUNS["anml"], "multi-similarity": RUNS["multi-similarity"]})
    alone = build_fair_tables(tmp_path / "results", Tier.FULL).sections[0]
    write_runs(tmp_path / "results", {"contrastive": [45.0, 47.0, 46.5], "npair": [44.0, 45.5, 44.0]})
    for seed in range(3):
        write_fair_result(tmp_path / "results", fair_payload("anml", "cub200", seed, 70.0 + seed,
                                                             variant="fair.search-point=lr-x2"))  # fmt: skip
    tables = build_fair_tables(tmp_path / "results", Tier.FULL)
    crowded = tables.sections[0]
    assert len(crowded.exploratory) == 4 and len(tables.searches[0].section.hypotheses) == 0
    for metric in ("R@1", "MAP@R"):
        before, after = (_hypothesis(s, "anml", metric).verdict for s in (alone, crowded))
        assert before.adjusted_p == after.adjusted_p == pytest.approx(20 * 0.01980394, rel=1e-4)  # not 2 x p
    for comparison in [*crowded.exploratory, *tables.searches[0].section.exploratory]:
        verdict = comparison.verdict
        if not comparison.difference.measured:
            continue
        assert verdict.family_size == 1 and verdict.adjusted_p == pytest.approx(comparison.difference.p_value)
    page = _page(tmp_path)[1]
    assert "Exploratory, unadjusted (each comparison alone, 95%)" in page
    assert _line(page, "| contrastive − multi-similarity | R@1 |").endswith("| worse (exploratory) |")


def test_the_reference_is_picked_on_validation_never_on_test(tmp_path):
    # contrastive has the best test R@1 of the baselines but the worst validation R@1
    write_runs(tmp_path / "results", {"multi-similarity": [50.0, 51.0, 52.0], "anml": RUNS["anml"]})
    write_runs(tmp_path / "results", {"contrastive": [60.0, 61.0, 62.0]}, validation_r1=30.0)
    section = build_fair_tables(tmp_path / "results", Tier.FULL).sections[0]
    assert section.reference.method == "multi-similarity"
    assert _hypothesis(section, "anml").reference.method == "multi-similarity"
    assert [c.ours.method for c in section.exploratory] == ["contrastive", "contrastive"]


def test_a_run_that_picked_its_untrained_evaluation_is_flagged_and_compares_nothing(tmp_path):
    write_runs(tmp_path / "results", {"multi-similarity": RUNS["multi-similarity"]})
    for seed, r1 in enumerate(RUNS["anml"]):  # seed 1's validation R@1 peaked before the first update
        untrained = (2.0, 90.0 if seed == 1 else 0.5)
        write_fair_result(tmp_path / "results", fair_payload("anml", "cub200", seed, r1, untrained=untrained))
    for seed in range(2):  # every cgml run failed
        write_fair_result(tmp_path / "results", fair_payload("cgml", "cub200", seed, 45.0, untrained=(2.0, 90.0)))
    section = build_fair_tables(tmp_path / "results", Tier.FULL).sections[0]
    anml = _hypothesis(section, "anml")
    assert anml.seeds == ([0, 2], [0, 2]) and anml.difference.estimate == pytest.approx(1.0)  # 51 - 50, 53 - 52
    assert anml.left_out == {"anml": [1]}
    cgml = _hypothesis(section, "cgml")
    assert cgml.difference is None and cgml.verdict is None and cgml.why == "no trained run of cgml"
    page = _page(tmp_path)[1]
    assert _line(page, "| anml | paper |").startswith("| anml | paper | PK 30×4 | 0, 1, 2 | 200, 0 ⚠, 200 |")
    assert "so the run enters no comparison (anml seed 1; cgml seed 0, 1)." in page
    assert _line(page, "| anml | R@1 |").startswith("| anml | R@1 | 0, 2 (out, untrained: anml 1) | +1.0 ")
    assert _line(page, "| cgml | R@1 |").endswith("| none: no trained run of cgml |")


def test_shared_batches_need_the_same_recorded_sampler_and_the_same_code(tmp_path):
    write_runs(tmp_path / "results", {"multi-similarity": RUNS["multi-similarity"]})
    cases = {"anml": {"commit": "f" * 20}, "gpw": {"record_sampler": False}, "drml": {}}
    for method, options in cases.items():
        write_runs(tmp_path / "results", {method: RUNS["anml"]}, **options)
    section = build_fair_tables(tmp_path / "results", Tier.FULL).sections[0]
    anml, gpw, drml = (_hypothesis(section, method) for method in cases)
    assert (anml.difference.test, anml.shared) == (WELCH, "other code: fffffff / 0123456")
    assert (gpw.difference.test, gpw.shared) == (WELCH, "the sampler as built is not recorded")
    assert (drml.difference.test, drml.shared) == (PAIRED, "")
    page = _page(tmp_path)[1]
    assert "| Welch (other code: fffffff / 0123456) |" in _line(page, "| anml | R@1 |")


def test_uncommitted_code_or_another_pipeline_is_not_shared_code(tmp_path):
    from dml_core.results import validate_results
    from dml_core.tables.fair.batches import why_not_shared

    base = fair_payload("anml", "cub200", 0, 50.0)
    dirty = {**base, "git": {**base["git"], "dirty": True}}
    cache = {**base, "environment": {**base["environment"], "data_loading": {"pipeline": "cache"}}}
    pool = {**base, "sampler": {**base["sampler"], "derived": {"pool_images": 10}}}
    results = {name: validate_results(payload, name) for name, payload in
               {"base": base, "dirty": dirty, "cache": cache, "pool": pool}.items()}  # fmt: skip
    assert why_not_shared(results["base"], results["base"]) == ""
    assert why_not_shared(results["base"], results["dirty"]) == "uncommitted or unknown code"
    assert why_not_shared(results["base"], results["cache"]) == "another data-loading pipeline: pil / cache"
    assert why_not_shared(results["base"], results["pool"]) == "other batches: another sampler, seed or training split"


@pytest.mark.parametrize("untrained_r1", [45.0, 30.0])
def test_the_mini_tier_compares_only_where_its_reference_clears_the_learning_bar(tmp_path, untrained_r1):
    # the reference gains 51 - 45 = 6 R@1 points over its untrained evaluation (under the bar of 15), or 21
    for method, values in (("multi-similarity", RUNS["multi-similarity"]), ("gpw", RUNS["gpw"])):
        for seed, r1 in enumerate(values):
            payload = fair_payload(method, "cub200", seed, r1, tier=Tier.MINI, untrained=(untrained_r1, 0.5))
            write_fair_result(tmp_path / "results", {**payload, "dataset": "embedded_mini"})
    tables = build_fair_tables(tmp_path / "results", Tier.MINI)
    section = tables.sections[0]
    assert tables.family_size == 10  # the mini tier's one data set
    written, page = _page(tmp_path, Tier.MINI)
    csv = pd.read_csv(written[1], keep_default_na=False)
    gpw = csv[(csv["kind"] == "hypothesis") & (csv["method"] == "gpw")]
    if untrained_r1 == 45.0:
        assert section.learning.gain == pytest.approx(6.0) and not section.compares
        assert "> **This tier cannot compare the methods here.** The reference, multi-similarity, does not clear" in (
            page)  # fmt: skip
        assert "it gains +6.0 test R@1 over its untrained evaluation" in page
        assert _line(page, "| gpw | R@1 |").endswith("| — |") and "| worse" not in page
        assert set(gpw["verdict"]) == {"cannot compare (mini tier)"}
    else:
        assert section.learning.gain == pytest.approx(21.0) and section.compares
        assert "cannot compare" not in page and _line(page, "| gpw | R@1 |").endswith("| worse |")
        assert set(gpw["verdict"]) == {WORSE}


def test_each_printed_gain_stands_beside_this_studys_difference_from_the_same_baseline(tmp_path):
    _write(tmp_path / "results")
    page = _page(tmp_path)[1]
    # damlrrm's Table 1 prints N-pair (not multi-similarity, the reference): +3.2 beside damlrrm - npair here,
    # Welch (two streams against PK): 62 - 41 = +21.0
    assert _line(page, "| damlrrm | damlrrm Table 1 (quoted row) | npair (N-pair) |").startswith(
        "| damlrrm | damlrrm Table 1 (quoted row) | npair (N-pair) | +3.2 R@1 | +21.0 ["
    )
    # anml's Table 4 prints multi-similarity: +1.9 beside anml - multi-similarity here, paired: +1.2
    assert _line(page, "| anml | anml Table 4 (quoted row) |").startswith(
        "| anml | anml Table 4 (quoted row) | multi-similarity (Multi-similarity loss) | +1.9 R@1 | +1.2 ["
    )
    section = build_fair_tables(tmp_path / "results", Tier.FULL).sections[0]
    assert {(p.comparison.ours.method, p.gain.baseline) for p in section.printed} == {
        ("damlrrm", "npair"), ("anml", "multi-similarity"), ("gpw", "npair"), ("gpw", "multi-similarity"),
        ("drml", "multi-similarity"), ("drml", "npair")}  # fmt: skip
    assert all(p.comparison.reference.method == p.gain.baseline for p in section.printed)


def test_methods_and_datasets_without_results_are_shown_as_not_run(tmp_path):
    _write(tmp_path / "results")
    _, page = _page(tmp_path)
    assert _line(page, "| proxy-anchor | baseline |") == "| proxy-anchor | baseline | — | not run | — | — | — | — | — |"
    assert _line(page, "| cgml | paper |") == "| cgml | paper | — | not run | — | — | — | — | — |"
    assert "- cgml: The fair recipe runs CGML(MS)" in page  # its paper printed no CUB pair: the note says why
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
    assert "| npair | 40.0 | 99.0 | 99.00 | 1 of 1 |" in page
    assert "| multi-similarity | 51.0 ± 1.0 | 51.0 ± 1.0 | 31.00 ± 1.00 | 0 of 3 |" in page


def test_the_validation_search_picks_each_methods_point_on_validation_never_on_test(tmp_path):
    root = tmp_path / "results"
    _write(root)
    low, high = "fair.search-point=loss-x0.5", "fair.search-point=lr-x2"
    for seed in range(3):  # anml's loss-x0.5: best validation, worst test; its lr-x2: best test only
        write_fair_result(root, fair_payload("anml", "cub200", seed, 30.0, variant=low, validation_r1=80.0))
        write_fair_result(root, fair_payload("anml", "cub200", seed, 90.0, variant=high, validation_r1=10.0))
        write_fair_result(root, fair_payload("npair", "cub200", seed, 60.0 + seed, variant=low, validation_r1=90.0))
    tables = build_fair_tables(root, Tier.FULL)
    (search,) = tables.searches
    chosen = {method.method: method.chosen for method in search.methods}
    assert chosen == {**dict.fromkeys(["damlrrm", "gpw", "drml", "multi-similarity"], "paper"), "anml": "loss-x0.5",
                      "npair": "loss-x0.5"}  # fmt: skip
    assert search.section.reference.method == "npair"  # the picked points are ranked again, on validation
    assert search.section.line("anml").values("R@1") == [30.0, 30.0, 30.0]
    assert search.section.line("damlrrm").values("R@1") == DAMLRRM  # not searched: its paper's point
    assert search.section.hypotheses == [] and all(c.verdict.family_size == 1 for c in search.section.exploratory)
    page = _page(tmp_path)[1]
    assert "### Validation search on CUB-200-2011 (reading `fair.search-point`, exploratory)" in page
    assert "| anml | paper 51.2 (3) · loss-x0.5 80.0 (3) · lr-x2 10.0 (3) | loss-x0.5 |" in page
    assert "(paper, loss-x0.5, loss-x2, lr-x0.5, lr-x2: reproduce/fair/study.yaml)" in page


def test_runs_of_other_readings_are_named_and_left_out(tmp_path):
    _write(tmp_path / "results")
    write_fair_result(tmp_path / "results", fair_payload("npair", "cub200", 0, 10.0, variant="precision=bf16"))
    write_fair_result(tmp_path / "results", fair_payload("npair", "cub200", 0, 10.0, variant="selection=best-r1",
                                                         rule="best_r1"))  # fmt: skip
    _, page = _page(tmp_path)
    assert "Not in these tables: the results files of runs under other readings: `precision=bf16` (1), " in page
    assert "| npair | baseline | PK 30×4 | 0, 1, 2 | 200, 200, 200 | 41.0 ± 1.0 |" in page


def test_the_csv_holds_the_same_numbers_at_full_precision(tmp_path):
    _write(tmp_path / "results")
    frame = pd.read_csv(_page(tmp_path)[0][1])
    lines = frame[frame["kind"].isin(["paper", "baseline", "control"])]
    damlrrm = lines[(lines["dataset"] == "cub200") & (lines["method"] == "damlrrm")].iloc[0]
    assert (damlrrm["R@1 mean"], damlrrm["R@1 std"], damlrrm["n_seeds"]) == (62.0, 2.0, 3)
    assert damlrrm["reference"] == "multi-similarity" and damlrrm["picked_steps"] == "200,200,200"
    hypotheses = frame[frame["kind"] == "hypothesis"]
    row = hypotheses[(hypotheses["method"] == "damlrrm") & (hypotheses["metric"] == "R@1")].iloc[0]
    assert (row["difference"], row["interval"], row["verdict"]) == (11.0, WELCH, INCONCLUSIVE)
    assert (row["p_holm"], row["family_size"]) == (pytest.approx(18 * 0.00365996, rel=1e-4), 20)
    gpw = hypotheses[(hypotheses["method"] == "gpw") & (hypotheses["metric"] == "MAP@R")].iloc[0]
    assert (gpw["interval"], gpw["verdict"]) == (PAIRED, WORSE)
    npair = frame[(frame["kind"] == "exploratory") & (frame["method"] == "npair")].iloc[0]
    assert npair["interval"] == "none (no spread)" and npair["verdict"] == NOT_ESTIMABLE
    printed = frame[frame["kind"] == "printed gain"]
    damlrrm_npair = printed[printed["method"] == "damlrrm"].iloc[0]
    assert damlrrm_npair["reference"] == "npair" and math.isclose(damlrrm_npair["printed_gain"], 3.2)
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


def test_the_study_runs_the_methods_its_file_declares_in_their_order(tmp_path):
    """The methods, their kinds and their order are reproduce/fair/study.yaml's, not derived from the suite's paper
    keys: a study that lists another baseline admits its runs as a baseline (the file above refused them), and
    lists its paper methods in the order it declares them."""
    study = yaml.safe_load((RECIPES_DIR / "fair" / "study.yaml").read_text())
    study["methods"]["papers"] = ["cgml", *(key for key in study["methods"]["papers"] if key != "cgml")]
    study["methods"]["baselines"].append("lifted")
    (tmp_path / "reproduce" / "fair").mkdir(parents=True)
    (tmp_path / "reproduce" / "fair" / "study.yaml").write_text(yaml.safe_dump(study, sort_keys=False))
    write_runs(tmp_path / "results", {"lifted": [45.0, 46.0, 47.0], "multi-similarity": RUNS["multi-similarity"]})
    section = build_fair_tables(tmp_path / "results", Tier.FULL, recipes_dir=tmp_path / "reproduce").sections[0]
    declared = [*study["methods"]["papers"], *study["methods"]["baselines"], *study["methods"]["controls"]]
    assert [line.method for line in section.lines] == declared
    assert section.line("lifted").kind == "baseline" and section.line("lifted").ran
    assert section.line("multi-similarity-paired").kind == "control" and section.line("cgml").kind == "paper"
    assert {c.ours.method for c in section.exploratory} == {"lifted"}  # the other baseline that ran: exploratory


def test_the_mini_tier_writes_its_own_page_with_its_banner(tmp_path):
    for method, values in RUNS.items():
        for seed, r1 in enumerate(values):
            payload = fair_payload(method, "cub200", seed, r1, tier=Tier.MINI)
            write_fair_result(tmp_path / "results", {**payload, "dataset": "embedded_mini"})
    written, page = _page(tmp_path, Tier.MINI)
    assert written[0] == tmp_path / "tables" / "mini" / "fair.md"
    assert "> **Mini tier: the whole protocol on the `embedded_mini` glyphs, a check of the machinery" in page
    assert "## CUB-200-2011 recipes (trained and tested on embedded_mini)" in page
    # no untrained evaluation to measure the reference's gain from: no comparison
    assert "no gain can be measured (a run made no untrained evaluation)" in page
    assert not (tmp_path / "tables" / "fair.md").exists()


def test_no_results_at_all_gives_a_page_of_not_run_and_no_figure(tmp_path):
    written, page = _page(tmp_path)
    assert [p.name for p in written] == ["fair.md", "fair.csv"]
    assert page.count("Not run: no results of any method") == 3


def test_a_verdict_with_a_bigger_difference_is_better(tmp_path):
    # damlrrm far ahead at five seeds, Welch: firm after Holm over the 20
    write_runs(tmp_path / "results", {"multi-similarity": [50.0, 51.0, 52.0, 50.5, 51.5]})
    for seed, r1 in enumerate([70.0, 71.0, 72.0, 70.5, 71.5]):
        write_fair_result(tmp_path / "results", fair_payload("damlrrm", "cub200", seed, r1, sampler=TWO_STREAMS))
    section = build_fair_tables(tmp_path / "results", Tier.FULL).sections[0]
    assert _hypothesis(section, "damlrrm").verdict.word == BETTER
