"""Fetching what the selected runs need before anything trains: their datasets and the weight files of the backbones
they load (never another's), each failure one line, nothing tried offline or with ``--no-download``."""

import dataclasses
import hashlib

import pytest

from dml_core.cli import main
from dml_core.data.index import index_path
from dml_core.models.weights import WEIGHT_FILES
from dml_core.output_paths import RECIPES_DIR
from dml_core.runner.fetch import fetch_missing_inputs
from dml_core.runner.inline import PaperRun
from tests.data.layouts import make_cub, make_tgz, md5_of, shrink_spec, use_catalog


@pytest.fixture
def served_inputs(tmp_path, monkeypatch, http_server):
    """A tiny CUB and GoogLeNet's file (a stand-in: its entry's sha256 is its own) on a loopback server, BN-Inception
    on none that answers, the registry shrunk; ``(data root, served, the damlrrm ours-cub200 plans)``."""
    url, served = http_server
    monkeypatch.delenv("HF_HUB_OFFLINE", raising=False)
    monkeypatch.setenv("DML_WEIGHTS_DIR", str(tmp_path / "weights"))
    expected = make_cub(tmp_path / "src")
    archive = make_tgz(tmp_path / "CUB_200_2011.tgz", tmp_path / "src", ["CUB_200_2011"])
    shrink_spec(monkeypatch, "cub200", expected, {"CUB_200_2011.tgz": archive})
    served.files["/CUB_200_2011.tgz"] = archive.read_bytes()
    content = b"googlenet stand-in"
    googlenet = dataclasses.replace(WEIGHT_FILES["googlenet"], sha256=hashlib.sha256(content).hexdigest())
    monkeypatch.setitem(WEIGHT_FILES, "googlenet", googlenet)
    served.files["/googlenet.pth"] = content
    served.statuses["/bn_inception.pth"] = 503
    weights = {
        "googlenet": (googlenet.file_name, googlenet.sha256, [f"{url}/googlenet.pth"]),
        "bn_inception": (WEIGHT_FILES["bn_inception"].file_name, WEIGHT_FILES["bn_inception"].sha256,
                         [f"{url}/bn_inception.pth"]),
    }  # fmt: skip
    routes = {"cub200": [[("CUB_200_2011.tgz", f"{url}/CUB_200_2011.tgz", md5_of(archive))]]}
    use_catalog(monkeypatch, tmp_path / "catalog.yaml", routes, weights)
    paper = PaperRun(
        "damlrrm", only=["ours-cub200"], runs_root=tmp_path / "runs", results_root=tmp_path / "results",
        tables_root=tmp_path / "tables", data_root=tmp_path / "data",
    )  # fmt: skip
    return tmp_path / "data", served, paper.planned()[0]


def test_the_runs_datasets_and_backbones_are_fetched_and_nothing_else(tmp_path, served_inputs):
    data, served, plans = served_inputs
    said = []
    assert fetch_missing_inputs(plans, [], data, said.append, progress=False) == []
    assert said[0] == "inputs: fetching weight file googlenet-1378be20.pth, dataset cub200"
    assert said[1].startswith(f"  weight file googlenet-1378be20.pth: fetched into {tmp_path / 'weights'}")
    assert said[2] == f"  dataset cub200: prepared under {data} (train 6, test 6 images)"
    assert index_path(data / "cub200").is_file() and len(served.ranges) == 2  # never BN-Inception's host
    said.clear()
    assert fetch_missing_inputs(plans, [], data, said.append, progress=False) == [] and said == []


def test_offline_nothing_is_tried_and_a_failure_is_one_line(served_inputs, monkeypatch):
    data, served, plans = served_inputs
    monkeypatch.setenv("DML_OFFLINE", "1")
    said = []
    (line,) = fetch_missing_inputs(plans, [], data, said.append, progress=False)
    assert said == [f"inputs: {line}"] and served.ranges == []
    assert line.startswith("not fetched (downloads are off: HF_HUB_OFFLINE or DML_OFFLINE is set): weight file")
    monkeypatch.delenv("DML_OFFLINE")
    served.statuses["/CUB_200_2011.tgz"] = 404
    (line,) = fetch_missing_inputs(plans, [], data, said.append, progress=False)
    assert line.startswith("dataset cub200: cub200: every source failed: ") and "HTTP 404" in line
    assert f"  {line.replace(': ', ': NOT FETCHED: ', 1)}" in said


def test_no_download_refuses_the_missing_inputs_without_a_request(served_inputs, capsys):
    data, served, _ = served_inputs
    status = main(["reproduce", "damlrrm", "--only", "ours-cub200", "--device", "cpu", "--no-download",
                   "--data-root", str(data), "--runs", str(data.parent / "runs"), "--results",
                   str(data.parent / "results"), "--tables", str(data.parent / "tables")])  # fmt: skip
    err = capsys.readouterr().err
    assert status == 2 and "missing inputs (1 of 1 run blocked)" in err and served.ranges == []


def test_a_linear_runs_uci_set_is_prepared_by_its_route_and_a_bundled_one_is_left_alone(tmp_path, monkeypatch):
    # Monk1's route is the suite's own generator (no network); Iris ships with scikit-learn and needs nothing.
    monkeypatch.delenv("HF_HUB_OFFLINE", raising=False)
    paper = PaperRun("anml", recipes_dir=RECIPES_DIR, runs_root=tmp_path / "runs", results_root=tmp_path / "results",
                     tables_root=tmp_path / "tables", only=["nca-uci-monk1", "nca-uci-iris"])  # fmt: skip
    _, linear_runs = paper.planned()
    lines = []
    assert fetch_missing_inputs([], linear_runs, tmp_path / "data", lines.append, progress=False) == []
    assert lines[0] == "inputs: fetching UCI set Monk1"
    assert lines[1].startswith(f"  UCI set Monk1: cached at {tmp_path / 'data' / 'uci' / 'Monk1.npz'}")
    assert fetch_missing_inputs([], linear_runs, tmp_path / "data", lines.append, progress=False) == []
    assert len(lines) == 2  # prepared: nothing more to fetch
