"""The mini tier's page: per run untrained and trained R@1 / NMI over seeds, the gain, the headline ordering, and
the banner that says it is a small-scale check (synthetic results files; the numbers are made up)."""

import pytest
import yaml

from dml_core.errors import InputError
from dml_core.recipes.mini import MiniComparison
from dml_core.results import write_results
from dml_core.tables.pages.mini import LEARNING_GAIN, build_mini_page, mini_results, orderings, summarize_runs
from tests.tables.synthetic import PAPER_KEY, results_payload, write_results_file

COMPARISON = {
    "proposed": "ours-cub200",
    "baselines": ["lifted-cub200"],
    "claim": "OURS beats Lifted (Table 1).",
    "why": "the two runs of the synthetic paper",
    "main": "ours-cub200",
}


def _mini_payload(recipe_id: str, seed: int, untrained: float, trained: float, **options) -> dict:
    """A mini results file: an evaluation at iteration 0 and one at the end."""
    payload = results_payload(
        recipe_id,
        seed=seed,
        curve=[{"R@1": untrained, "NMI": 10.0}, {"R@1": trained, "NMI": 30.0 + seed}],
        **options,
    )
    payload["evaluations"][0]["iteration"] = 0
    payload.update(mini=True, backbone="bn_inception", backbone_width=0.25)
    return payload


def _write(results_root, payload):
    return write_results_file(results_root / "mini", payload)


@pytest.fixture
def recipes_dir(tmp_path):
    folder = tmp_path / "reproduce" / PAPER_KEY
    folder.mkdir(parents=True)
    (folder / "mini.yaml").write_text(yaml.safe_dump(COMPARISON))
    return tmp_path / "reproduce"


def test_rows_give_mean_and_std_over_seeds_and_the_gain(tmp_path):
    for seed, trained in enumerate([30.0, 34.0, 38.0]):
        _write(tmp_path, _mini_payload("ours-cub200", seed, untrained=3.0, trained=trained))
    for seed, trained in enumerate([10.0, 12.0]):
        _write(tmp_path, _mini_payload("lifted-cub200", seed, untrained=2.0, trained=trained))
    rows = {row.run_name: row for row in summarize_runs(mini_results(tmp_path, PAPER_KEY))}
    ours, lifted = rows["ours-cub200"], rows["lifted-cub200"]
    assert ours.seeds == (0, 1, 2) and ours.trained_r1 == (30.0, 34.0, 38.0)
    assert ours.gain == pytest.approx(31.0) and ours.learns
    assert lifted.gain == pytest.approx(9.0) and not lifted.learns  # below LEARNING_GAIN
    assert LEARNING_GAIN == 15.0
    (ordering,) = orderings(list(rows.values()), MiniComparison(**COMPARISON))
    assert ordering.holds and ordering.difference == pytest.approx(23.0) and not ordering.within_spread


def test_full_scale_and_smoke_files_are_not_mini_results(tmp_path):
    _write(tmp_path, _mini_payload("ours-cub200", 0, 3.0, 30.0))
    not_mini = _mini_payload("lifted-cub200", 0, 3.0, 30.0)
    not_mini["mini"] = False
    _write(tmp_path, not_mini)
    assert [r.recipe.id for r in mini_results(tmp_path, PAPER_KEY)] == ["ours-cub200"]
    assert mini_results(tmp_path / "nowhere", PAPER_KEY) == []


def test_the_page_is_labelled_a_small_scale_check_and_judges_the_ordering(tmp_path, recipes_dir):
    for seed in range(3):
        _write(tmp_path / "results", _mini_payload("ours-cub200", seed, 3.0, 20.0 + seed))
        _write(tmp_path / "results", _mini_payload("lifted-cub200", seed, 2.5, 20.5 + seed))
    page = build_mini_page(PAPER_KEY, tmp_path / "results", tmp_path / "tables", recipes_dir)
    assert page.markdown_path == tmp_path / "tables" / "mini" / f"{PAPER_KEY}.md"
    text = page.markdown_path.read_text()
    assert "a small-scale check that each recipe learns, NOT a reproduction of the paper" in text
    assert [row.run_name for row in page.rows] == ["ours-cub200", "lifted-cub200"]  # proposed first
    row = "| ours-cub200 | proposed | BN-Inception, 1/4 width | — | 200 | 0, 1, 2 | 3.0 ± 0.0 | 21.0 ± 1.0 | +18.0 "
    assert row in text
    ordering = (
        "| ours-cub200 > lifted-cub200 | 21.0 ± 1.0 | 21.5 ± 1.0 | -0.5 | does not hold (within the seeds' spread) |"
    )
    assert ordering in text
    assert "OURS beats Lifted (Table 1)." in text and "What it does not show" in text


def test_a_run_below_the_learning_gain_is_flagged(tmp_path, recipes_dir):
    _write(tmp_path / "results", _mini_payload("ours-cub200", 0, 3.0, 10.0))
    text = build_mini_page(PAPER_KEY, tmp_path / "results", tmp_path / "tables", recipes_dir).markdown_path.read_text()
    assert "+7.0 ⚠ below 15" in text
    assert "No ordering yet: it needs mini results of the proposed run and of a baseline." in text
    assert f"measured in the paper's notes, `papers/{PAPER_KEY}/method.md`." in text


def test_a_train_time_measured_on_a_shared_host_is_flagged_and_an_unrecorded_load_is_not(tmp_path, recipes_dir):
    alone, shared, unrecorded = (_mini_payload(run, 0, 3.0, 30.0) for run in ("ours-cub200", "lifted-cub200", "x"))
    alone["timing"]["host_load"] = {"cpus": 2, "samples": 4, "mean": 2.2, "max": 2.9}  # its own workers' load
    shared["timing"]["host_load"] = {"cpus": 2, "samples": 4, "mean": 5.1, "max": 6.0}  # beside other work
    for payload in (alone, shared, unrecorded):  # the last: a file written before the load was recorded
        _write(tmp_path / "results", payload)
    text = build_mini_page(PAPER_KEY, tmp_path / "results", tmp_path / "tables", recipes_dir).markdown_path.read_text()
    times = {line.split(" | ")[0]: line.rsplit(" | ", 1)[1] for line in text.splitlines() if line.endswith(" |")}
    assert times["| ours-cub200"] == times["| x"] == "7200 s |"
    assert times["| lifted-cub200"] == "7200 s ⚠ host shared (load 5.1 on 2 CPUs) |"


def test_a_glyph_pretrained_run_is_a_row_of_its_own_named_and_labelled_so(tmp_path, recipes_dir):
    for seed in range(2):
        _write(tmp_path / "results", _mini_payload("ours-cub200", seed, 3.0, 25.0))
        warm = _mini_payload("ours-cub200", seed, 78.0, 82.0)
        warm["weights"] = {"requested": "glyph-pretrained", "id": "glyph-pretrained bn_inception-w0.25-... sha256:0"}
        write_results(tmp_path / "results" / "mini" / PAPER_KEY / f"ours-cub200-glyph-seed{seed}.json", warm)
    page = build_mini_page(PAPER_KEY, tmp_path / "results", tmp_path / "tables", recipes_dir)
    assert [(row.run_name, row.start) for row in page.rows] == [
        ("ours-cub200", "random"), ("ours-cub200~start=glyph-pretrained", "glyph-pretrained"),
    ]  # fmt: skip
    text = page.markdown_path.read_text()
    assert "| ours-cub200~start=glyph-pretrained | other | BN-Inception, 1/4 width, glyph-pretrained |" in text
    assert "> Rows named `~start=glyph-pretrained` start instead from the backbone pretrained" in text
    assert "+4.0 |" in text and "+4.0 ⚠" not in text  # not held to the random start's bar
    assert "papers/" not in text.split("What it does not show")[1]  # no run flagged: no pointer to the notes


def test_an_ordering_against_a_run_that_did_not_learn_is_not_called_a_fair_check(tmp_path, recipes_dir):
    for seed in range(2):
        _write(tmp_path / "results", _mini_payload("ours-cub200", seed, 3.0, 25.0))
        _write(tmp_path / "results", _mini_payload("lifted-cub200", seed, 3.0, 2.0))  # a loss at a trivial point
    text = build_mini_page(PAPER_KEY, tmp_path / "results", tmp_path / "tables", recipes_dir).markdown_path.read_text()
    verdict = "| +23.0 | holds; not a fair check: lifted-cub200 gained under 15 |"
    assert verdict in text


def test_no_results_yet_says_how_to_get_them(tmp_path, recipes_dir):
    text = build_mini_page(PAPER_KEY, tmp_path / "results", tmp_path / "tables", recipes_dir).markdown_path.read_text()
    assert f"No mini results yet: `nox -s dml -- reproduce {PAPER_KEY} --mini` trains them." in text
    assert "No ordering yet" in text


def test_a_bad_mini_file_names_the_file_and_field(tmp_path, recipes_dir):
    path = recipes_dir / PAPER_KEY / "mini.yaml"
    path.write_text(yaml.safe_dump({**COMPARISON, "baselines": []}))
    with pytest.raises(InputError, match=rf"{path}: invalid mini comparison: field baselines"):
        build_mini_page(PAPER_KEY, tmp_path / "results", tmp_path / "tables", recipes_dir)
    path.write_text(yaml.safe_dump({**COMPARISON, "baselines": ["ours-cub200"]}))
    with pytest.raises(InputError, match="expected distinct run ids"):
        build_mini_page(PAPER_KEY, tmp_path / "results", tmp_path / "tables", recipes_dir)
