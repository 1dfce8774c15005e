"""The results gate: a deep results file stands for a published row only as the pinned run of that row, with its
numbers what its own evaluations say. Each forged file of the fault-injection pass is refused with one line
naming the file and field; honest files (and linear ones) are admitted."""

import json
import math

import pytest

from dml_core.published import load_published
from dml_core.results import select_every_rule
from dml_core.tables.gate.admission import admit_results, protocol_metrics
from dml_core.tables.gate.join import read_results_folder
from dml_core.tables.gate.planned import load_plan
from dml_core.tier import Tier
from tests.tables.synthetic import (
    PAPER_KEY,
    linear_payload,
    pinned_payload,
    write_linear_file,
    write_papers_dir,
    write_recipe,
    write_results_file,
)

SMOKE_CURVE = [{"R@1": 1.01, "R@2": 2.0, "R@4": 3.0, "R@8": 4.0, "NMI": 5.0}]  # the smoke protocol: K in 1, 2, 4, 8


@pytest.fixture
def root(tmp_path):
    write_papers_dir(tmp_path)
    write_recipe(tmp_path / "reproduce")
    return tmp_path


def _admit(root, smoke=False, data_root=None):
    paper = load_published(PAPER_KEY, root / "papers")
    folder = root / "results" / ("smoke" if smoke else "") / PAPER_KEY
    return admit_results(
        paper, load_plan(root / "reproduce", PAPER_KEY), folder, tier=Tier.from_flags(smoke), data_root=data_root
    )


def _forge(root, payload, name="forged-seed0.json", smoke=False):
    """Write ``payload`` as it stands (NaN included), as a hand-edited file would be: no schema check on the way."""
    folder = root / "results" / ("smoke" if smoke else "") / PAPER_KEY
    folder.mkdir(parents=True, exist_ok=True)
    (folder / name).write_text(json.dumps(payload))
    return folder / name


def _only_refusal(admission):
    assert admission.admitted == [], [item.path.name for item in admission.admitted]
    [refusal] = admission.refused
    return refusal.reason


def test_the_pinned_runs_are_admitted_full_and_smoke(root):
    for seed in (0, 1):
        write_results_file(root / "results", pinned_payload(seed=seed))
    write_results_file(root / "results", pinned_payload(smoke=True, curve=SMOKE_CURVE))
    full = _admit(root)
    assert [item.path.name for item in full.admitted] == ["ours-cub200-seed0.json", "ours-cub200-seed1.json"]
    assert full.refused == []
    smoke = _admit(root, smoke=True)
    assert [item.path.name for item in smoke.admitted] == ["ours-cub200-seed0.json"] and smoke.refused == []


def test_a_smoke_file_with_its_flag_flipped_is_refused_from_the_full_tables(root):
    payload = pinned_payload(smoke=True, curve=SMOKE_CURVE)
    payload["smoke"] = False  # the embedded set's numbers, claimed as a full run
    path = _forge(root, payload)
    [refusal] = _admit(root).refused
    assert refusal.path == path
    assert refusal.reason == (
        "field dataset: expected 'cub200' (the dataset of table1/ours-cub200), found 'embedded' (a generated set "
        "of the CPU tiers: its numbers stand for no published row)"
    )


def test_a_smoke_file_left_in_the_full_folder_is_refused_not_an_error(root):
    write_results_file(root / "results", pinned_payload(smoke=True, curve=SMOKE_CURVE))
    (root / "results" / "smoke" / PAPER_KEY / "ours-cub200-seed0.json").rename(root / "stray.json")
    _forge(root, json.loads((root / "stray.json").read_text()), "ours-cub200-seed0.json")
    assert _only_refusal(_admit(root)).startswith("field smoke: expected full (not smoke) results in")


def test_a_run_with_other_set_overrides_is_refused_naming_them(root):
    payload = pinned_payload(seed=0)
    # What `nox -s dml -- train ours-cub200 --set model.weights=random --set training.iterations=1` records.
    payload["recipe"]["overrides"] = ["training.seed=0", "model.weights=random", "training.iterations=1"]
    payload["recipe"]["content"]["model"]["weights"] = "random"
    payload["recipe"]["content"]["training"]["iterations"] = 1
    _forge(root, payload)
    assert _only_refusal(_admit(root)) == (
        "field recipe.overrides: expected only training.seed and data.pipeline (a run with other settings is not "
        "the pinned run), found model.weights=random, training.iterations=1"
    )


def test_a_run_of_a_recipe_that_changed_since_is_refused_by_its_hash(root):
    write_results_file(root / "results", pinned_payload())
    write_recipe(root / "reproduce", optimizer={"name": "adam", "lr": 2e-3})  # the pinned recipe moved on
    reason = _only_refusal(_admit(root))
    assert reason.startswith("field recipe.sha256: expected ")
    assert "(run ours-cub200 of the recipes with training.seed=0), found " in reason
    assert reason.endswith("the recipe changed since the run, or the run was not this recipe")


# What 40ae3e4 recorded for the pinned run with random crops, seed 0, on the cache pipeline (hashed apart from its
# PIL runs then, though its batches are theirs), when training.bf16 was true unless set.
RANDOM_CROP_CACHE_RUN_HASH_BEFORE_AUTO = "657c687843652cac41f996f20e39e8e6c1ee43f95df515e915eb1daf1d13af58"


def test_an_earlier_versions_cache_run_of_the_pil_batches_is_admitted_by_the_hash_it_recorded(tmp_path):
    write_papers_dir(tmp_path)
    random_crops = {
        "data": {"dataset": "cub200", "num_workers": 0, "transforms": {"train_crop": "random_crop"}},
        "training": {"iterations": 10, "bf16": True},
    }
    write_recipe(tmp_path / "reproduce", **random_crops)
    payload = pinned_payload(random_crops)
    payload["recipe"]["overrides"].append("data.pipeline=cache")
    payload["recipe"]["content"]["data"]["pipeline"] = "cache"
    payload["recipe"]["sha256"] = RANDOM_CROP_CACHE_RUN_HASH_BEFORE_AUTO
    _forge(tmp_path, payload)
    admission = _admit(tmp_path)
    assert [item.path.name for item in admission.admitted] == ["forged-seed0.json"] and admission.refused == []
    payload["recipe"]["content"]["data"]["transforms"]["train_crop"] = "random_resized_crop"  # another computation
    _forge(tmp_path, payload)
    assert _only_refusal(_admit(tmp_path)).startswith("field recipe.content: expected settings of hash 657c68784365")


def test_settings_edited_under_a_kept_hash_are_refused(root):
    payload = pinned_payload()
    payload["recipe"]["content"]["model"]["weights"] = "random"  # the hash copied from an honest file
    _forge(root, payload)
    assert _only_refusal(_admit(root)).startswith("field recipe.content: expected settings of hash ")


def test_recorded_settings_that_are_no_recipe_are_refused_naming_the_field(root):
    payload = pinned_payload()
    payload["recipe"]["content"]["model"]["widht"] = 0.5
    _forge(root, payload)
    assert _only_refusal(_admit(root)) == (
        "field recipe.content: expected the settings of a recipe, found field model.widht: Extra inputs are not "
        "permitted; found 0.5"
    )


def test_a_run_of_no_pinned_recipe_or_of_another_row_is_refused(root):
    _forge(root, pinned_payload({"id": "mine"}), "mine-seed0.json")
    assert _only_refusal(_admit(root)) == "field recipe.id: expected one of the 1 runs of the recipes, found 'mine'"
    (root / "results" / PAPER_KEY / "mine-seed0.json").unlink()
    payload = pinned_payload()
    payload["targets"] = [{"table": "table1", "row": "lifted-cub200"}]  # claims another row's reproduction
    _forge(root, payload)
    assert _only_refusal(_admit(root)) == (
        "field targets: expected rows run ours-cub200 targets (table1/ours-cub200, table8/ours-cub200), found "
        "table1/lifted-cub200"
    )


@pytest.mark.parametrize("forged", [60.0, 9999.0])
def test_a_selection_its_evaluations_do_not_give_is_refused(root, forged):
    payload = pinned_payload(curve=[{"R@1": 1.01, "R@2": 2.0, "NMI": 3.0}])
    payload["selection"]["metrics"]["R@1"] = forged
    payload["selections"]["best_r1"] = payload["selection"]
    _forge(root, payload)
    expected = {
        60.0: "field selection.metrics.R@1: expected 1.01 (the evaluation at iteration 10, rule best_r1), found 60.0",
        9999.0: "field selection.metrics.R@1: expected a finite percentage in [0, 100], found 9999.0",
    }[forged]
    assert _only_refusal(_admit(root)) == expected


def test_a_selection_of_another_evaluation_or_rule_is_refused(root):
    payload = pinned_payload(curve=[{"R@1": 40.0, "R@2": 2.0, "NMI": 3.0}, {"R@1": 30.0, "R@2": 2.0, "NMI": 3.0}])
    payload["selections"]["final"]["metrics"]["R@1"] = 40.0  # the final pick given the best evaluation's number
    _forge(root, payload)
    assert _only_refusal(_admit(root)) == (
        "field selections.final.metrics.R@1: expected 30.0 (the evaluation at iteration 10, rule final), found 40.0"
    )
    payload = pinned_payload(curve=[{"R@1": 40.0, "R@2": 2.0, "NMI": 3.0}, {"R@1": 30.0, "R@2": 2.0, "NMI": 3.0}])
    payload["selection"] = payload["selections"]["final"]  # the recipe's rule is best_r1
    payload["evaluation_protocol"]["selection_rule"] = "final"
    _forge(root, payload)
    assert (
        _only_refusal(_admit(root))
        == "field selection.rule: expected 'best_r1' (its recipe's evaluation.selection), found 'final'"
    )


def test_validation_numbers_beside_a_pick_must_be_its_evaluations(root):
    payload = pinned_payload(curve=[{"R@1": 40.0, "R@2": 2.0, "NMI": 3.0}, {"R@1": 30.0, "R@2": 2.0, "NMI": 3.0}])
    for evaluation, r1 in zip(payload["evaluations"], (20.0, 25.0), strict=True):
        evaluation["validation_metrics"] = {"R@1": r1, "R@2": 2.0, "NMI": 3.0}
    payload["selections"] = select_every_rule(payload["evaluations"])
    payload["selection"] = payload["selections"]["best_r1"]
    assert payload["selections"]["best_val_r1"]["iteration"] == 10 != payload["selection"]["iteration"]
    _forge(root, payload)
    assert [item.path.name for item in _admit(root).admitted] == ["forged-seed0.json"]
    payload["selections"]["final"]["validation_metrics"]["R@1"] = 20.0  # the first evaluation's validation number
    _forge(root, payload)
    assert _only_refusal(_admit(root)) == (
        "field selections.final.validation_metrics: expected {'R@1': 25.0, 'R@2': 2.0, 'NMI': 3.0} (the evaluation "
        "at iteration 10, rule final), found {'R@1': 20.0, 'R@2': 2.0, 'NMI': 3.0}"
    )


def test_a_nan_or_missing_metric_is_refused(root):
    curve = [{"R@1": 50.0, "R@2": 60.0, "NMI": 70.0}, {"R@1": 55.0, "R@2": 60.0, "NMI": 70.0}]
    payload = pinned_payload(curve=curve)
    payload["evaluations"][0]["metrics"]["NMI"] = math.nan  # not the selected evaluation: the line would look fine
    _forge(root, payload)
    assert _only_refusal(_admit(root)) == (
        "field evaluations[0].metrics.NMI: expected a finite percentage in [0, 100], found nan"
    )
    payload = pinned_payload(curve=curve)
    for record in (*payload["evaluations"], payload["selection"], *payload["selections"].values()):
        del record["metrics"]["NMI"]  # gone everywhere: the line would read "not evaluated"
    _forge(root, payload)
    assert _only_refusal(_admit(root)) == (
        "field evaluations[0].metrics: expected every metric of its recipe's protocol (R@1, R@2, NMI), found none "
        "for NMI"
    )


def test_a_results_file_of_another_dataset_is_refused(root):
    payload = pinned_payload()
    payload["dataset"] = "cars196"
    _forge(root, payload)
    assert _only_refusal(_admit(root)) == (
        "field dataset: expected 'cub200' (the dataset of table1/ours-cub200), found 'cars196'"
    )


def test_a_precision_its_recipe_does_not_train_in_on_that_device_is_refused(root):
    payload = pinned_payload()  # on an H100, its recipe at training.precision's default: fp32
    _forge(root, {**payload, "precision": "fp32"}, name="honest-seed0.json")
    assert _admit(root).refused == []
    _forge(root, {**payload, "precision": "bf16"}, name="honest-seed0.json")
    assert _only_refusal(_admit(root)) == "field precision: expected 'fp32' (its recipe's), found 'bf16'"


def test_a_run_stopped_short_of_its_last_iteration_is_refused(root):
    payload = pinned_payload(curve=[{"R@1": 50.0, "R@2": 60.0, "NMI": 70.0}])
    payload["evaluations"][0]["iteration"] = 5
    payload["selection"]["iteration"] = payload["selections"]["best_r1"]["iteration"] = 5
    payload["selections"]["final"]["iteration"] = 5
    _forge(root, payload)
    assert (
        _only_refusal(_admit(root))
        == "field evaluations: expected the last at iteration 10 (its recipe's), found iteration 5"
    )


def test_a_rehearsal_is_refused_wherever_it_lies_even_when_its_numbers_look_whole(root):
    # A rehearsal's file in the reproductions' folder (moved there by hand), its evaluations made to look complete:
    # the gate reads the record it carries, not only where it lies.
    write_results_file(root / "results", {**pinned_payload(), "rehearsal": {"max_steps": 1, "recipe_iterations": 10}})
    assert _only_refusal(_admit(root)) == (
        "field rehearsal: expected none (a run trained as long as its recipe says), found a rehearsal cut to 1 of its "
        "recipe's 10 iterations"
    )


def test_unreadable_and_duplicate_files_are_refused_and_the_others_still_admitted(root):
    write_results_file(root / "results", pinned_payload())
    folder = root / "results" / PAPER_KEY
    (folder / "binary.json").write_bytes(b"\x89PNG\r\n\x1a\n\x00\xff")
    (folder / "empty.json").write_bytes(b"")
    (folder / "folder.json").mkdir()
    (folder / "copy.json").write_text((folder / "ours-cub200-seed0.json").read_text())
    admission = _admit(root)
    assert [item.path.name for item in admission.admitted] == ["copy.json"]  # the first of the two, by name
    reasons = {refusal.path.name: refusal.reason for refusal in admission.refused}
    assert reasons["binary.json"] == "not valid JSON (not UTF-8 text); expected the results file"
    assert reasons["empty.json"].startswith("not valid JSON (Expecting value")
    assert reasons["folder.json"] == "is a folder, expected the results file (a JSON file)"
    assert reasons["ours-cub200-seed0.json"].startswith("recipe ours-cub200 seed 0 is also in ")


def test_linear_files_are_admitted_as_before(tmp_path):
    write_linear_file(tmp_path / "results", linear_payload())
    paper = load_published("anml")
    admission = admit_results(
        paper, load_plan(tmp_path / "reproduce", "anml"), tmp_path / "results" / "anml", tier=Tier.FULL, data_root=None
    )
    assert [item.results.run_id for item in admission.admitted] == ["lanml-plus-uci-iris"]
    assert admission.refused == [] and admission.notes == []


def test_the_reader_refuses_instead_of_raising(tmp_path):
    assert read_results_folder(tmp_path / "nothing", tier=Tier.FULL) == ([], [])


def test_the_metrics_of_a_protocol_are_named_as_the_evaluator_names_them(root):
    recipe = load_plan(root / "reproduce", PAPER_KEY).definitions["ours-cub200"].recipe()
    assert protocol_metrics(recipe) == ["R@1", "R@2", "NMI"]
    everything = recipe.model_copy(update={"evaluation": recipe.evaluation.model_copy(update={
        "metrics": ["recall", "map_at_r", "r_precision", "nmi", "f1"], "recall_ks": None})})  # fmt: skip
    assert protocol_metrics(everything) == [  # CUB's standard K list
        "R@1", "R@2", "R@4", "R@8", "R@16", "R@32", "MAP@R", "RP", "NMI", "F1",
    ]  # fmt: skip
