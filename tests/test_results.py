"""Results files: schema check with file/field errors, atomic write, selection rules."""

import json

import pytest

from dml_core.errors import InputError
from dml_core.results import load_results, select, write_results


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


def test_round_trip(tmp_path):
    path = write_results(tmp_path / "a" / "results.json", _payload())
    assert load_results(path).selection.iteration == 20
    assert not list(path.parent.glob(".*tmp"))


@pytest.mark.parametrize(
    ("mutate", "message"),
    [
        (lambda p: p.pop("seed"), "field seed: Field required"),
        (lambda p: p.update(schema_version=2), "field schema_version: expected 1, found 2"),
        (lambda p: p["recipe"].update(sha256="xyz"), "field recipe.sha256"),
        (lambda p: p.update(evaluations=[]), "field evaluations"),
        (lambda p: p.update(extra=1), "field extra"),
    ],
)
def test_schema_errors_name_file_and_field(tmp_path, mutate, message):
    payload = _payload()
    mutate(payload)
    path = tmp_path / "bad.json"
    path.write_text(json.dumps(payload))
    with pytest.raises(InputError) as error:
        load_results(path)
    assert str(path) in str(error.value) and message in str(error.value)


def test_write_refuses_an_invalid_payload_and_leaves_no_file(tmp_path):
    payload = _payload()
    payload.pop("timing")
    with pytest.raises(InputError):
        write_results(tmp_path / "results.json", payload)
    assert not (tmp_path / "results.json").exists()
