"""`nox -s dml -- evaluate-embeddings`: JSON out, masks, and one-line errors with exit code 2."""

import json
import subprocess
import sys

import numpy as np
import pytest

from dml_core.cli import main


@pytest.fixture
def arrays(tmp_path):
    rng = np.random.default_rng(0)
    labels = np.repeat(np.arange(5), 4)
    embeddings = (rng.normal(size=(5, 6))[labels] * 4 + rng.normal(size=(20, 6))).astype(np.float32)
    np.save(tmp_path / "emb.npy", embeddings)
    np.save(tmp_path / "labels.npy", labels)
    return tmp_path


def test_prints_all_metrics_as_json_and_writes_the_file(arrays, capsys):
    out = arrays / "out" / "metrics.json"
    code = main(
        [
            "evaluate-embeddings",
            str(arrays / "emb.npy"),
            str(arrays / "labels.npy"),
            "--k",
            "1",
            "2",
            "--json",
            str(out),
        ]
    )
    assert code == 0
    printed = json.loads(capsys.readouterr().out)
    assert set(printed["metrics"]) == {"R@1", "R@2", "MAP@R", "RP", "NMI", "F1"}
    assert printed["protocol"]["normalize"] is True
    assert json.loads(out.read_text()) == printed


def test_query_gallery_masks_and_no_normalize(arrays, capsys):
    query = np.zeros(20, bool)
    query[::2] = True
    np.save(arrays / "q.npy", query)
    np.save(arrays / "g.npy", ~query)
    code = main(
        [
            "evaluate-embeddings",
            str(arrays / "emb.npy"),
            str(arrays / "labels.npy"),
            "--k",
            "1",
            "--query-mask",
            str(arrays / "q.npy"),
            "--gallery-mask",
            str(arrays / "g.npy"),
            "--no-normalize",
            "--metrics",
            "recall",
        ]
    )
    assert code == 0
    printed = json.loads(capsys.readouterr().out)
    assert printed["protocol"]["protocol"] == "query-gallery"
    assert printed["protocol"]["normalize"] is False
    assert list(printed["metrics"]) == ["R@1"]


@pytest.mark.parametrize(
    ("embeddings", "labels", "extra", "message"),
    [
        (np.zeros((4, 2)), np.zeros(3), [], "expected one label per embedding (4), found 3"),
        (np.array([[0.0, 1], [np.nan, 1], [1, 1], [2, 2]]), np.array([0, 0, 1, 1]), ["--k", "1"], "NaN or inf"),
        (np.ones((4, 2)), np.zeros(4), ["--k", "1"], "at least 2 classes"),
        (np.ones((4, 2)), np.array([0, 0, 1, 1]), ["--k", "1", "8"], "K=8 is larger than the 3 gallery items"),
    ],
)
def test_bad_input_is_one_line_and_exit_code_2(tmp_path, capsys, embeddings, labels, extra, message):
    np.save(tmp_path / "e.npy", embeddings)
    np.save(tmp_path / "l.npy", labels)
    assert main(["evaluate-embeddings", str(tmp_path / "e.npy"), str(tmp_path / "l.npy"), *extra]) == 2
    err = capsys.readouterr().err
    assert err.startswith("error: ") and message in err and str(tmp_path / "e.npy") in err


def test_missing_file_names_it(tmp_path, capsys):
    assert main(["evaluate-embeddings", str(tmp_path / "nope.npy"), str(tmp_path / "l.npy")]) == 2
    assert "nope.npy: embeddings file not found" in capsys.readouterr().err


def test_help_runs_as_a_module():
    result = subprocess.run(
        [sys.executable, "-m", "dml_core.cli", "evaluate-embeddings", "--help"],
        capture_output=True,
        text=True,
        check=True,
    )
    assert "--query-mask" in result.stdout and "--no-normalize" in result.stdout
