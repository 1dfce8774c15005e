"""An interrupted Table 2 run resumes after its last finished split, and only under the same settings."""

import json

import pytest

import dml_core.linear.protocol as protocol
import dml_core.linear.split_checkpoint as split_checkpoint
import dml_core.runner.linear as linear_reproduce
from dml_core.errors import InputError
from dml_core.output_paths import RECIPES_DIR
from dml_core.results import load_results
from dml_core.runner.linear import execute_linear_run, plan_linear_runs
from dml_core.tier import Tier

IRIS_PLAN = RECIPES_DIR / "anml" / "linear" / "table2-iris.yaml"


class Interrupted(Exception):
    pass


def _pnca_run(tmp_path, name="results"):
    runs = plan_linear_runs("anml", [IRIS_PLAN], Tier.SMOKE, tmp_path / name, runs_root=tmp_path / "runs")
    return next(run for run in runs if run.method == "pnca")


def _count_cross_validations(monkeypatch):
    calls = []
    original = protocol.cross_validate

    def counting(*args, **kwargs):
        calls.append(args[4])  # the split's seed
        return original(*args, **kwargs)

    monkeypatch.setattr(protocol, "cross_validate", counting)
    return calls


def _splits_without_time(path):
    return [{k: v for k, v in split.model_dump().items() if k != "seconds"} for split in load_results(path).splits]


def _interrupt_after_first_split(monkeypatch):
    original = split_checkpoint.save_done_splits

    def save_then_stop(*args):
        original(*args)
        raise Interrupted

    monkeypatch.setattr(split_checkpoint, "save_done_splits", save_then_stop)


def test_an_interrupted_run_resumes_after_its_finished_splits_with_the_same_numbers(tmp_path, monkeypatch):
    uninterrupted = _pnca_run(tmp_path, "reference")
    announced = []
    execute_linear_run(uninterrupted, announce=announced.append)
    assert announced == [""]  # nothing to resume

    run = _pnca_run(tmp_path)
    assert run.splits_path == tmp_path / "runs" / "smoke" / "anml" / "pnca-uci-iris-seed0" / "splits.json"
    with monkeypatch.context() as patch:
        _interrupt_after_first_split(patch)
        with pytest.raises(Interrupted):
            execute_linear_run(run)
    kept = json.loads(run.splits_path.read_text())
    assert kept["settings_sha256"] == run.sha256 and len(kept["splits"]) == 1
    assert not run.results_path.exists()

    calls = _count_cross_validations(monkeypatch)
    monkeypatch.setattr(linear_reproduce, "git_state", lambda: {"commit": "b" * 40, "dirty": False})
    announced = []
    execute_linear_run(run, announce=announced.append)
    assert announced == [f", resuming after 1 finished (kept in {run.splits_path})"]
    assert calls == [1]  # only the second split (seed 0 + 1) was computed again
    assert _splits_without_time(run.results_path) == _splits_without_time(uninterrupted.results_path)
    assert not run.splits_path.exists()  # gone once the results file is written
    assert load_results(run.results_path).plan.path == "reproduce/anml/linear/table2-iris.yaml"  # any checkout
    # Each start's git state, with the split where it took over (the second start "ran newer code").
    git = load_results(run.results_path).git
    assert [(s["from"], s["commit"]) for s in git["segments"]] == [
        (0, kept["git_segments"][0]["commit"]),
        (1, "b" * 40),
    ]
    assert (
        git["commit"] == kept["git_segments"][0]["commit"]
        and "segments" not in load_results(uninterrupted.results_path).git
    )


def test_splits_kept_under_other_settings_are_not_used(tmp_path, monkeypatch):
    run = _pnca_run(tmp_path)
    with monkeypatch.context() as patch:
        _interrupt_after_first_split(patch)
        with pytest.raises(Interrupted):
            execute_linear_run(run)
    kept = json.loads(run.splits_path.read_text())
    run.splits_path.write_text(json.dumps({**kept, "settings_sha256": "0" * 64}))
    calls = _count_cross_validations(monkeypatch)
    execute_linear_run(run)
    assert calls == [0, 1]


def test_a_damaged_splits_file_is_refused_naming_the_file_and_field(tmp_path):
    run = _pnca_run(tmp_path)
    run.splits_path.parent.mkdir(parents=True)
    run.splits_path.write_text(
        json.dumps({"settings_sha256": run.sha256, "git_segments": [], "splits": [{"split": 0}]})
    )
    with pytest.raises(InputError, match=r"splits\.json: field splits\[0\]: expected the fields .* found \['split'\]"):
        execute_linear_run(run)
    run.splits_path.write_text("{not json")
    with pytest.raises(InputError, match=r"splits\.json: not valid JSON \(Expecting property name"):
        execute_linear_run(run)


def test_finished_splits_must_be_the_first_ones_of_the_same_seed(tmp_path):
    import numpy as np

    X, y = np.random.default_rng(0).normal(size=(30, 3)), np.arange(30) % 3
    first = protocol.run_protocol_on_arrays(X, y, "euclidean", n_splits=2, seed=5)
    with pytest.raises(InputError, match="done: expected split 0 with seed 7 at position 0, found split 0 with seed 5"):
        protocol.run_protocol_on_arrays(X, y, "euclidean", n_splits=2, seed=7, done=first.splits[:1])
    resumed = protocol.run_protocol_on_arrays(X, y, "euclidean", n_splits=2, seed=5, done=first.splits[:1])
    assert [s.accuracy for s in resumed.splits] == [s.accuracy for s in first.splits]
