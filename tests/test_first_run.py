"""A rehearsal of a new user's first run, on the CPU: the README's commands against hosts as they are today, served
by a loopback HTTP server with tiny archives in the real layouts. CUB's first source refuses (HTTP 403) and its
mirror serves it; Cars196 comes as Kaggle's class-folder archive, SOP as its zip; BN-Inception's only host is down.
Then `dml weights --fetch`, `dml prepare` for each data set, and `dml reproduce damlrrm` on its full-scale OURS
recipe cut to one step: the run reaches and finishes its first step on the CPU, apart from real results."""

from dataclasses import replace

import pytest
import torch
import torchvision

from dml_core.cli import main
from dml_core.data.download import USER_AGENT, file_digests
from dml_core.models.weights import WEIGHT_FILES
from dml_core.results import load_results
from tests.data.conftest import loopback_server
from tests.data.layouts import (
    cars_archives,
    make_cars_kaggle,
    make_cub,
    make_sop,
    make_tgz,
    make_zip,
    shrink_spec,
    use_catalog,
)

# ours-cub200 draws 12 classes of 5 images into its neat stream and a batch of 60 from its pool of 60 shuffled
# images: 24 training classes (CUB's are 1-100) give two neat batches, which the one shuffled batch interlaces.
CUB_CLASSES = (*range(1, 25), 101, 102, 103)
HOST_DOWN = "http://127.0.0.1:9"  # the discard port: nothing listens there


def _sha256(path) -> str:
    return file_digests(path, ["sha256"])["sha256"]


def _serve(served, route: str, path) -> str:
    served.files[f"/{route}/{path.name}"] = path.read_bytes()
    return f"/{route}/{path.name}"


def _weights(tmp_path, monkeypatch, base: str, served) -> None:
    """GoogLeNet's file as torchvision's model gives it (untrained: the published bytes cannot be had here), a
    stand-in ResNet-50 file, and BN-Inception's on a host that is down; each entry's sha256 is its file's."""
    folder = tmp_path / "served-weights"
    folder.mkdir()
    googlenet = folder / WEIGHT_FILES["googlenet"].file_name
    torch.save(torchvision.models.googlenet(weights=None, aux_logits=True, init_weights=True).state_dict(), googlenet)
    resnet = folder / WEIGHT_FILES["resnet50"].file_name
    resnet.write_bytes(b"a stand-in: fetched and checked, never loaded")
    urls = {}
    for backbone, path in (("googlenet", googlenet), ("resnet50", resnet)):
        monkeypatch.setitem(WEIGHT_FILES, backbone, replace(WEIGHT_FILES[backbone], sha256=_sha256(path)))
        urls[backbone] = (path.name, _sha256(path), [base + _serve(served, "weights", path)])
    bn = WEIGHT_FILES["bn_inception"]
    urls["bn_inception"] = (bn.file_name, bn.sha256, [f"{HOST_DOWN}/cadene/{bn.file_name}"])
    return urls


def _datasets(tmp_path, monkeypatch, base: str, served) -> dict:
    """Each data set's archive in its real layout and name, the registry shrunk to it, and its routes."""
    src, archives = tmp_path / "src", tmp_path / "archives"
    archives.mkdir()
    cub = make_cub(src / "cub", classes=CUB_CLASSES, per_class=5)
    cub_archive = make_tgz(archives / "CUB_200_2011.tgz", src / "cub", ["CUB_200_2011"])
    cars = make_cars_kaggle(src / "cars")
    (cars_archive,) = cars_archives("kaggle", archives, src / "cars")
    sop = make_sop(src / "sop")
    sop_archive = make_zip(archives / "Stanford_Online_Products.zip", src / "sop", "Stanford_Online_Products")
    routes = {}
    for dataset, expected, archive in (("cub200", cub, cub_archive), ("cars196", cars, cars_archive),
                                       ("sop", sop, sop_archive)):  # fmt: skip
        shrink_spec(monkeypatch, dataset, expected, {archive.name: archive})
        md5 = file_digests(archive, ["md5"])["md5"]
        routes[dataset] = [[(archive.name, base + _serve(served, "mirror", archive), md5)]]
    refused = _serve(served, "publisher", cub_archive)
    served.statuses[refused] = 403
    routes["cub200"].insert(0, [(cub_archive.name, base + refused, None)])
    return routes


@pytest.mark.slow
def test_a_new_users_first_run_from_todays_sources_to_the_first_full_scale_step(tmp_path, monkeypatch, capsys):
    monkeypatch.delenv("HF_HUB_OFFLINE", raising=False)  # a user's box has the network
    monkeypatch.setenv("DML_WEIGHTS_DIR", str(tmp_path / "weights"))
    data = tmp_path / "data"
    with loopback_server() as (base, served):
        weights = _weights(tmp_path, monkeypatch, base, served)
        use_catalog(monkeypatch, tmp_path / "catalog.yaml", _datasets(tmp_path, monkeypatch, base, served), weights)

        # 1. Every weight file is tried, though BN-Inception's host (first in order) is down.
        assert main(["weights", "--fetch"]) == 2
        out, err = capsys.readouterr()
        assert "bn_inception: failed: " in out and f"{HOST_DOWN}/cadene/" in out
        assert "googlenet: fetched sha256:" in out and "resnet50: fetched sha256:" in out
        assert out.index("bn_inception: failed") < out.index("googlenet: fetched")
        assert "1 of 3 files not fetched (bn_inception)" in err

        # 2. Each data set is prepared from the catalog's routes; CUB's refusal costs one line.
        for dataset in ("cub200", "cars196", "sop"):
            assert main(["prepare", dataset, "--root", str(data), "--quiet"]) == 0, dataset
        out, err = capsys.readouterr()
        refusals = [line for line in (out + err).splitlines() if "403" in line]
        assert len(refusals) == 1 and refusals[0].startswith("cub200: 127.0.0.1:"), refusals
        assert "trying the next source" in refusals[0]
        assert set(served.user_agents) == {USER_AGENT}

    # 3. The paper's full-scale OURS recipe, cut to one step on the CPU (pretrained GoogLeNet, 227-pixel crops).
    runs, results, tables = tmp_path / "runs", tmp_path / "results", tmp_path / "tables"
    status = main([
        "reproduce", "damlrrm", "--only", "ours-cub200", "--device", "cpu", "--max-steps", "1", "--no-progress",
        "--data-root", str(data), "--runs", str(runs), "--results", str(results), "--tables", str(tables),
    ])  # fmt: skip
    out, err = capsys.readouterr()
    assert status == 0, out[-3000:] + err[-3000:]
    plan = out[: out.index("[1/1] ours-cub200 seed 0: training (rehearsal: its first 1 step) on CPU (")]
    assert plan.startswith("damlrrm: the plan (a rehearsal")  # before the first step: the device, inputs, disk
    assert "  device: CPU (" in plan and f"dataset cub200 under {data}: present" in plan
    assert "weight file googlenet-1378be20.pth (googlenet): present" in plan and "\n  disk:\n" in plan
    (results_file,) = (results / "rehearsal").rglob("ours-cub200-seed0.json")
    rehearsal = load_results(results_file)
    assert rehearsal.rehearsal.max_steps == 1 and rehearsal.timing.iterations == 1
    assert rehearsal.weights["id"].startswith(f"{WEIGHT_FILES['googlenet'].file_name} sha256:")
    assert [evaluation.iteration for evaluation in rehearsal.evaluations] == [1]
    assert not list(results.glob("damlrrm/*.json")), "a rehearsal never lands where the paper's results go"
