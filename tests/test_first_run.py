"""A rehearsal of a new user's first run, on the CPU: the README's one command against hosts as they are today, served
by a loopback HTTP server with tiny archives in the real layouts. CUB's publisher refuses (HTTP 403), its first mirror
stalls and its second drops the first connection mid-file; BN-Inception's only host is down, which damlrrm, loading
GoogLeNet alone, never notices. `dml reproduce damlrrm` on its full-scale OURS recipe cut to one step fetches
everything, resumes the dropped file with `Range`, and finishes its first step on the CPU, apart from real results.
Killed in a download and in an extraction, the same command goes on from where it was and leaves nothing over; a
refused prepare does not block the next correct one."""

import os
import signal
import subprocess
import sys
import time
from dataclasses import replace
from pathlib import Path

import pytest
import torch
import torchvision

from dml_core.cli import main
from dml_core.data.download import STALL_VARIABLE, USER_AGENT, file_digests
from dml_core.models.weights import WEIGHT_FILES
from dml_core.results import load_results
from tests.data.layouts import cars_archives, make_cars_kaggle, make_cub, make_tgz, shrink_spec, use_catalog
from tests.dml_child import write_setup

# ours-cub200 draws 12 classes of 5 images into its neat stream and a batch of 60 from its pool of 60 shuffled
# images: 24 training classes (CUB's are 1-100) give two neat batches, which the one shuffled batch interlaces.
CUB_CLASSES = (*range(1, 25), 101, 102, 103)
HOST_DOWN = "http://127.0.0.1:9"  # the discard port: nothing listens there
REPOSITORY = Path(__file__).resolve().parents[1]


def _sha256(path) -> str:
    return file_digests(path, ["sha256"])["sha256"]


def _serve(served, route: str, path) -> str:
    served.files[f"/{route}/{path.name}"] = path.read_bytes()
    return f"/{route}/{path.name}"


def _tiny_cub(tmp_path, monkeypatch):
    """CUB's published archive in its real layout and name, the registry shrunk to it: (rows, archive)."""
    expected = make_cub(tmp_path / "src" / "cub", classes=CUB_CLASSES, per_class=5)
    (tmp_path / "archives").mkdir()
    archive = make_tgz(tmp_path / "archives" / "CUB_200_2011.tgz", tmp_path / "src" / "cub", ["CUB_200_2011"])
    shrink_spec(monkeypatch, "cub200", expected, {archive.name: archive})
    return expected, archive


def _weights(tmp_path, monkeypatch, base: str, served) -> dict:
    """GoogLeNet's file as torchvision's model gives it (untrained: the published bytes cannot be had here) on the
    loopback server, BN-Inception's on a host that is down; each entry's sha256 is its file's."""
    googlenet = tmp_path / "served-weights" / WEIGHT_FILES["googlenet"].file_name
    googlenet.parent.mkdir()
    torch.save(torchvision.models.googlenet(weights=None, aux_logits=True, init_weights=True).state_dict(), googlenet)
    monkeypatch.setitem(WEIGHT_FILES, "googlenet", replace(WEIGHT_FILES["googlenet"], sha256=_sha256(googlenet)))
    bn = WEIGHT_FILES["bn_inception"]
    return {
        "googlenet": (googlenet.name, _sha256(googlenet), [base + _serve(served, "weights", googlenet)]),
        "bn_inception": (bn.file_name, bn.sha256, [f"{HOST_DOWN}/cadene/{bn.file_name}"]),
    }


def _reproduce_args(tmp_path) -> list[str]:
    return [
        "reproduce", "damlrrm", "--only", "ours-cub200", "--device", "cpu", "--max-steps", "1", "--no-progress",
        "--data-root", str(tmp_path / "data"), "--runs", str(tmp_path / "runs"), "--results",
        str(tmp_path / "results"), "--tables", str(tmp_path / "tables"),
    ]  # fmt: skip


def _nothing_left_over(data: Path) -> None:
    """The data root holds the prepared copy and its index, and nothing of the work that made it: no staging,
    journal, set-aside entry, partial or spare download."""
    assert sorted(path.name for path in data.iterdir() if path.name != ".locks") == ["cub200"]
    assert sorted(path.name for path in (data / "cub200").iterdir()) == ["CUB_200_2011", "dml_index.csv"]


@pytest.mark.slow
def test_one_command_fetches_through_a_refusing_a_stalling_and_a_dropping_host_and_trains(
    tmp_path, monkeypatch, capsys, http_server
):
    base, served = http_server
    monkeypatch.delenv("HF_HUB_OFFLINE", raising=False)  # a user's box has the network
    monkeypatch.setenv("DML_WEIGHTS_DIR", str(tmp_path / "weights"))
    monkeypatch.setenv(STALL_VARIABLE, "0.5")
    _, archive = _tiny_cub(tmp_path, monkeypatch)
    weights = _weights(tmp_path, monkeypatch, base, served)
    md5, size = file_digests(archive, ["md5"])["md5"], len(archive.read_bytes())
    refused, stalled, dropped = (_serve(served, route, archive) for route in ("publisher", "stalls", "drops"))
    served.statuses[refused] = 403
    served.stalls[stalled] = 1000
    served.drops[dropped] = size // 2
    routes = [[(archive.name, base + path, md5 if path != refused else None)] for path in (refused, stalled, dropped)]
    use_catalog(monkeypatch, tmp_path / "catalog.yaml", {"cub200": routes}, weights)

    status = main(_reproduce_args(tmp_path))
    out, err = capsys.readouterr()
    assert status == 0, out[-3000:] + err[-3000:]
    plan = out[: out.index("inputs: fetching ")]
    assert plan.startswith("damlrrm: the plan (a rehearsal")  # printed before anything is fetched
    assert f"dataset cub200 under {tmp_path / 'data'}: missing" in plan
    fetching = out[out.index("inputs: fetching ") : out.index("[1/1] ours-cub200 seed 0: training")]
    host = base.removeprefix("http://")
    assert fetching.startswith("inputs: fetching weight file googlenet-1378be20.pth, dataset cub200\n")
    assert f"cub200: {host}: HTTP 403 Forbidden; trying the next source" in fetching
    assert f"cub200: {host}: no data for 0.5 s; abandoned; trying the next source" in fetching
    resumed = 1000 + size // 2  # the stalled mirror's 1,000 bytes, then half the rest from the dropping one
    assert f"{archive.name}: {host}: connection dropped at {resumed:,} of {size:,} bytes; resuming" in fetching
    assert f"  dataset cub200: prepared under {tmp_path / 'data'}" in fetching and "bn_inception" not in out
    # the same checksum: the dropping mirror went on from the stalled one's bytes, then from where it dropped
    assert served.ranges[-2:] == ["bytes=1000-", f"bytes={resumed}-"]
    assert set(served.user_agents) == {USER_AGENT}
    _nothing_left_over(tmp_path / "data")

    (results_file,) = (tmp_path / "results" / "rehearsal").rglob("ours-cub200-seed0.json")
    rehearsal = load_results(results_file)
    assert rehearsal.rehearsal.max_steps == 1 and rehearsal.timing.iterations == 1
    assert rehearsal.weights["id"].startswith(f"{WEIGHT_FILES['googlenet'].file_name} sha256:")
    assert [evaluation.iteration for evaluation in rehearsal.evaluations] == [1]
    assert not list((tmp_path / "results").glob("damlrrm/*.json")), "a rehearsal never lands where results go"


def _start(tmp_path, name: str, setup: Path) -> subprocess.Popen:
    """The one command in a child process (its output in ``tmp_path/<name>.log``: shown if the test fails)."""
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(REPOSITORY), os.environ.get("PYTHONPATH", "")])}
    command = [sys.executable, "-m", "tests.dml_child", str(setup), *_reproduce_args(tmp_path), "--skip-missing"]
    with (tmp_path / f"{name}.log").open("w") as log:
        return subprocess.Popen(command, env=env, stdout=log, stderr=subprocess.STDOUT, cwd=REPOSITORY)


def _kill_when(process: subprocess.Popen, reached, what: str, timeout: float = 300) -> None:
    deadline = time.monotonic() + timeout
    while not reached() and process.poll() is None and time.monotonic() < deadline:
        time.sleep(0.05)
    assert process.poll() is None, f"the child ended before {what}"
    assert reached(), f"the child did not reach {what} in {timeout} s"
    process.send_signal(signal.SIGKILL)
    process.wait()


@pytest.mark.slow
def test_killed_in_a_download_and_in_an_extraction_the_command_goes_on_and_leaves_nothing(
    tmp_path, monkeypatch, capsys, http_server
):
    base, served = http_server
    monkeypatch.delenv("HF_HUB_OFFLINE", raising=False)
    monkeypatch.setenv("DML_WEIGHTS_DIR", str(tmp_path / "weights"))
    expected, archive = _tiny_cub(tmp_path, monkeypatch)
    path, size = _serve(served, "mirror", archive), len(archive.read_bytes())
    served.stalls[path] = size // 3  # the host sends a third, then holds the connection: a slow download
    googlenet = WEIGHT_FILES["googlenet"]  # its host is down: the run is left out (--skip-missing), not trained
    weights = {"googlenet": (googlenet.file_name, googlenet.sha256, [f"{HOST_DOWN}/{googlenet.file_name}"])}
    md5 = file_digests(archive, ["md5"])["md5"]
    use_catalog(monkeypatch, tmp_path / "catalog.yaml", {"cub200": [[(archive.name, base + path, md5)]]}, weights)
    part = tmp_path / "data" / "cub200" / ".downloads" / f"{archive.name}.part"

    setup = write_setup(tmp_path / "setup.json", "cub200", expected, {archive.name: archive})
    first = _start(tmp_path, "killed-in-the-download", setup)
    _kill_when(first, lambda: part.is_file() and part.stat().st_size == size // 3, "a third of the download")

    del served.stalls[path]
    marker = tmp_path / "extracting"
    setup = write_setup(tmp_path / "setup.json", "cub200", expected, {archive.name: archive}, block_extraction=marker)
    second = _start(tmp_path, "killed-in-the-extraction", setup)
    _kill_when(second, marker.is_file, "the extraction")
    assert served.ranges[-1] == f"bytes={size // 3}-", "the second run resumed the first one's download"
    assert [entry.name for entry in (tmp_path / "data" / "cub200").iterdir() if entry.name.startswith(".extract-")]

    requests = len(served.ranges)
    status = main([*_reproduce_args(tmp_path), "--skip-missing"])
    out, err = capsys.readouterr()
    assert status == 3, out[-3000:] + err[-3000:]  # prepared; the run left out for want of GoogLeNet's file
    assert len(served.ranges) == requests, "the finished download was used, not fetched again"
    assert f"  dataset cub200: prepared under {tmp_path / 'data'} (train 120, test 15 images)" in out
    assert "NOT RUN ours-cub200 seed 0: weight file googlenet-1378be20.pth" in out
    _nothing_left_over(tmp_path / "data")


def test_a_refused_prepare_does_not_block_the_next_correct_one(tmp_path, monkeypatch, capsys):
    expected = make_cars_kaggle(tmp_path / "complete")
    shrink_spec(monkeypatch, "cars196", expected)
    (complete_zip,) = cars_archives("kaggle", tmp_path, tmp_path / "complete")
    incomplete = tmp_path / "stanford-car-dataset-by-classes-folder"
    make_cars_kaggle(incomplete)
    for image in next((incomplete / "car_data" / "car_data" / "test").iterdir()).iterdir():
        image.unlink()  # one class's test images missing
    data = tmp_path / "data"
    assert main(["prepare", "cars196", "--root", str(data), "--archive", str(incomplete), "--quiet"]) == 2
    assert "listed images are missing" in capsys.readouterr().err
    assert [path.name for path in data.iterdir() if not path.name.startswith(".")] == []
    assert main(["prepare", "cars196", "--root", str(data), "--archive", str(complete_zip), "--quiet"]) == 0
    assert "cars196: verified (train 8, test 8 images)" in capsys.readouterr().out
