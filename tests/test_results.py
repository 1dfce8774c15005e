"""Results files: schema check with file/field errors, atomic write, selection rules; the linear kind (anml
Table 2) is as strict, and deep files (no ``kind``) load exactly as before."""

import json

import pytest

from dml_core.errors import InputError
from dml_core.results import (
    LinearResultsFile,
    ResultsFile,
    load_results,
    select,
    select_every_rule,
    write_results,
)
from tests.tables.synthetic import linear_payload


def _payload():
    evaluations = [
        {"iteration": 10, "epoch": 0.5, "metrics": {"R@1": 50.0, "NMI": 40.0}, "seconds": 1.0},
        {"iteration": 20, "epoch": 1.0, "metrics": {"R@1": 55.0, "NMI": 41.0}, "seconds": 1.0},
        {"iteration": 30, "epoch": 1.5, "metrics": {"R@1": 54.0, "NMI": 45.0}, "seconds": 1.0},
    ]
    return {
        "schema_version": 1,
        "status": "complete",
        "created": "2026-11-21T00:00:00+00:00",
        "recipe": {"id": "r", "path": None, "sha256": "0" * 64, "overrides": [], "content": {}},
        "paper": "cgml",
        "targets": [{"table": "table3", "row": "x"}],
        "dataset": "embedded",
        "backbone": "googlenet",
        "weights": {"requested": "random", "id": "random init"},
        "seed": 0,
        "smoke": True,
        "world_size": 1,
        "git": {"commit": "abc", "dirty": False},
        "environment": {"torch": "2.15.0"},
        "evaluation_protocol": {"self_exclusion": "by index"},
        "evaluations": evaluations,
        "selection": select(evaluations, "best_r1"),
        "timing": {
            "iterations": 30,
            "train_seconds": 3.0,
            "data_wait_seconds": 1.0,
            "compute_seconds": 2.0,
            "iterations_per_second": 10.0,
            "evaluation_seconds": 3.0,
            "resumed_runs": 0,
        },
    }


def test_selection_rules():
    evaluations = _payload()["evaluations"]
    assert select(evaluations, "best_r1") == {"rule": "best_r1", "iteration": 20, "metrics": {"R@1": 55.0, "NMI": 41.0}}
    assert select(evaluations, "final")["iteration"] == 30


def test_every_rule_is_picked_and_best_r1_only_where_r1_was_measured():
    evaluations = _payload()["evaluations"]
    picks = select_every_rule(evaluations)
    assert picks == {"best_r1": select(evaluations, "best_r1"), "final": select(evaluations, "final")}
    assert (picks["best_r1"]["iteration"], picks["final"]["iteration"]) == (20, 30)
    without_recall = [{**e, "metrics": {"NMI": e["metrics"]["NMI"]}} for e in evaluations]
    assert select_every_rule(without_recall) == {"final": select(without_recall, "final")}


def test_a_file_holds_both_picks_beside_the_recipes_rule_and_older_files_load_without_them(tmp_path):
    payload = {**_payload(), "selections": select_every_rule(_payload()["evaluations"])}
    loaded = load_results(write_results(tmp_path / "both.json", payload))
    assert loaded.selection.rule == "best_r1" and loaded.selection == loaded.selections["best_r1"]
    assert loaded.selections["final"].iteration == 30 and loaded.selections["final"].metrics["R@1"] == 54.0
    assert loaded.metric_samples("R@1") == [55.0]  # tables keep reading the recipe's rule
    assert load_results(write_results(tmp_path / "old.json", _payload())).selections is None


def _with_validation(evaluations, validation_r1):
    return [
        {**evaluation, "validation_metrics": {"R@1": r1, "NMI": 30.0}}
        for evaluation, r1 in zip(evaluations, validation_r1, strict=True)
    ]


def test_best_val_r1_picks_by_validation_r1_earliest_on_ties_and_reports_the_test_metrics():
    evaluations = _with_validation(_payload()["evaluations"], [61.0, 48.0, 61.0])  # test R@1: 50, 55, 54
    pick = select(evaluations, "best_val_r1")
    assert pick == {
        "rule": "best_val_r1",
        "iteration": 10,
        "metrics": {"R@1": 50.0, "NMI": 40.0},
        "validation_metrics": {"R@1": 61.0, "NMI": 30.0},
    }
    assert select(evaluations, "best_r1")["iteration"] == 20  # the test classes would have picked another
    assert select_every_rule(evaluations)["best_val_r1"] == pick
    assert select_every_rule(evaluations)["final"]["validation_metrics"]["R@1"] == 61.0
    assert "best_val_r1" not in select_every_rule(_payload()["evaluations"])  # no validation split: no such pick
    partly = [evaluations[0], _payload()["evaluations"][1]]
    assert set(select_every_rule(partly)) == {"best_r1", "final"}


def test_best_val_map_r_picks_by_validation_map_r_where_every_evaluation_has_one():
    evaluations = [
        {**evaluation, "validation_metrics": {"R@1": r1, "MAP@R": map_r}}
        for evaluation, r1, map_r in zip(_payload()["evaluations"], [61.0, 48.0, 50.0], [20.0, 20.0, 23.5], strict=True)
    ]  # test R@1: 50, 55, 54
    assert select(evaluations, "best_val_map_r")["iteration"] == 30  # MAP@R's pick, where R@1 picks iteration 10
    assert select(evaluations, "best_val_map_r")["metrics"]["R@1"] == 54.0
    assert select_every_rule(evaluations)["best_val_map_r"] == select(evaluations, "best_val_map_r")
    without = _with_validation(_payload()["evaluations"], [61.0, 48.0, 61.0])  # validation R@1 and NMI only
    assert "best_val_map_r" not in select_every_rule(without) and "best_val_r1" in select_every_rule(without)


def test_a_file_selected_on_validation_records_both_metric_sets_and_loads(tmp_path):
    evaluations = _with_validation(_payload()["evaluations"], [40.0, 42.0, 41.0])
    payload = {
        **_payload(),
        "evaluations": evaluations,
        "selection": select(evaluations, "best_val_r1"),
        "selections": select_every_rule(evaluations),
    }
    loaded = load_results(write_results(tmp_path / "validated.json", payload))
    assert loaded.selection.rule == "best_val_r1" and loaded.selection.iteration == 20
    assert loaded.selection.validation_metrics == {"R@1": 42.0, "NMI": 30.0}
    assert loaded.metric_samples("R@1") == [55.0]  # the test number of the evaluation validation picked
    assert loaded.evaluations[2].validation_metrics["R@1"] == 41.0
    assert load_results(write_results(tmp_path / "old.json", _payload())).evaluations[0].validation_metrics is None


@pytest.mark.parametrize(
    ("mutate", "message"),
    [
        (lambda p: p["selections"]["final"].update(rule="best_r1"), "selections.final: expected rule 'final'"),
        (lambda p: p["selections"]["best_r1"].update(iteration=30), "selections.best_r1: differs from selection"),
        (lambda p: p["selections"].update(best_loss=p["selection"]), "field selections.best_loss"),
    ],
)
def test_selections_that_contradict_themselves_or_the_selection_are_refused(tmp_path, mutate, message):
    _refused(tmp_path, {**_payload(), "selections": select_every_rule(_payload()["evaluations"])}, mutate, message)


def test_the_index_a_run_used_is_recorded_and_older_files_load_without_it(tmp_path):
    hashes = {"train": "1" * 64, "test": "2" * 64, "all": "3" * 64}
    path = write_results(tmp_path / "new.json", {**_payload(), "index_hashes": hashes})
    assert load_results(path).index_hashes == hashes
    assert load_results(write_results(tmp_path / "old.json", _payload())).index_hashes is None


def test_the_training_precision_is_recorded_and_older_files_read_it_from_their_recipe_and_device(tmp_path):
    def loaded(name, **fields):
        return load_results(write_results(tmp_path / f"{name}.json", {**_payload(), **fields}))

    assert loaded("recorded", precision="fp32", environment={"device": "cuda:0"}).training_precision == "fp32"
    # written before the precision was recorded: bf16 autocast on CUDA unless the recipe turned it off
    assert loaded("old-cuda", environment={"device": "cuda:0"}).training_precision == "bf16"
    fp32_recipe = {**_payload()["recipe"], "content": {"training": {"bf16": False}}}
    assert loaded("old-cuda-fp32", environment={"device": "cuda"}, recipe=fp32_recipe).training_precision == "fp32"
    assert loaded("old-cpu", environment={"device": "cpu"}).training_precision == "fp32"
    # a recipe that records training.precision, read as it says
    for precision in ("fp32", "bf16"):
        recipe = {**_payload()["recipe"], "content": {"training": {"precision": precision}}}
        assert loaded(precision, environment={"device": "cuda"}, recipe=recipe).training_precision == precision
    assert loaded("old-cpu").precision is None


def test_round_trip(tmp_path):
    path = write_results(tmp_path / "a" / "results.json", _payload())
    assert load_results(path).selection.iteration == 20
    assert not list(path.parent.glob(".*tmp"))


def _refused(tmp_path, payload: dict, mutate, message: str) -> None:
    """Write ``payload`` changed by ``mutate``; loading it must fail naming the file and ``message``."""
    mutate(payload)
    path = tmp_path / "bad.json"
    path.write_text(json.dumps(payload))
    with pytest.raises(InputError) as error:
        load_results(path)
    assert str(path) in str(error.value) and message in str(error.value)


@pytest.mark.parametrize(
    ("mutate", "message"),
    [
        (lambda p: p.pop("seed"), "field seed: Field required"),
        (lambda p: p.update(schema_version=2), "field schema_version: expected 1, found 2"),
        (lambda p: p["recipe"].update(sha256="xyz"), "field recipe.sha256"),
        (lambda p: p.update(evaluations=[]), "field evaluations"),
        (lambda p: p.update(extra=1), "field extra"),
        (lambda p: p.update(index_hashes={"train": "not a digest"}), "field index_hashes.train"),
    ],
)
def test_schema_errors_name_file_and_field(tmp_path, mutate, message):
    _refused(tmp_path, _payload(), mutate, message)


def test_write_refuses_an_invalid_payload_and_leaves_no_file(tmp_path):
    payload = _payload()
    payload.pop("timing")
    with pytest.raises(InputError):
        write_results(tmp_path / "results.json", payload)
    assert not (tmp_path / "results.json").exists()


def test_a_deep_file_without_kind_is_deep_and_kind_deep_is_accepted(tmp_path):
    loaded = load_results(write_results(tmp_path / "a.json", _payload()))
    assert isinstance(loaded, ResultsFile) and loaded.kind == "deep" and loaded.run_id == "r"
    assert loaded.metric_samples("R@1") == [55.0] and loaded.metric_samples("R@4") == []
    explicit = load_results(write_results(tmp_path / "b.json", {**_payload(), "kind": "deep"}))
    assert explicit == loaded


def test_a_linear_file_round_trips_with_its_per_split_accuracies(tmp_path):
    loaded = load_results(write_results(tmp_path / "linear.json", linear_payload((96.0, 100.0, 98.0))))
    assert isinstance(loaded, LinearResultsFile)
    assert (loaded.run_id, loaded.protocol.k_rule, loaded.protocol.grid_every) == ("lanml-plus-uci-iris", "test", 5)
    assert loaded.metric_samples("accuracy") == [96.0, 100.0, 98.0]
    assert loaded.summary.accuracy == 98.0 and loaded.summary.accuracy_std == 2.0


@pytest.mark.parametrize(
    ("mutate", "message"),
    [
        (lambda p: p.update(kind="svm"), "field kind: expected 'deep' or 'linear' (absent: 'deep'), found 'svm'"),
        (lambda p: p["protocol"].update(k_rule="best"),
         "field protocol.k_rule: Input should be 'test' or 'cv'; found 'best'"),
        (lambda p: p["protocol"].pop("grid_every"), "field protocol.grid_every: Field required"),
        (lambda p: p["protocol"].update(grid_every=0),
         "field protocol.grid_every: Input should be greater than or equal to 1; found 0"),
        (lambda p: p["splits"][0].update(accuracy=0.96),
         "summary.accuracy: expected the mean of the splits' accuracies 66.32"),
        (lambda p: p["protocol"].update(splits=30), "splits: expected 30 (protocol.splits), found 3"),
        (lambda p: p.update(targets=[]), "field targets: List should have at least 1 item"),
        (lambda p: p.update(timing={}), "field timing: Extra inputs are not permitted"),
        (lambda p: p.pop("kind"), "not a valid deep results file"),  # without kind it is read as deep, and fails
    ],
)  # fmt: skip
def test_a_malformed_linear_file_is_refused_naming_file_field_expected_and_found(tmp_path, mutate, message):
    _refused(tmp_path, linear_payload((96.0, 100.0, 98.0)), mutate, message)
