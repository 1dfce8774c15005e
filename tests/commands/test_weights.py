"""``dml weights``: status listing, hash check, the offline refusal and ``--fetch`` trying every file, through the
real command line."""

from __future__ import annotations

import dataclasses
import hashlib

from dml_core.cli import main
from dml_core.models.weights import WEIGHT_FILES
from tests.data.layouts import use_catalog


def test_lists_missing_and_checks_present_files(tmp_path, monkeypatch, capsys):
    monkeypatch.setenv("DML_WEIGHTS_DIR", str(tmp_path))
    content = b"fixture weights"
    (tmp_path / "googlenet-1378be20.pth").write_bytes(content)
    entry = dataclasses.replace(WEIGHT_FILES["googlenet"], sha256=hashlib.sha256(content).hexdigest())
    monkeypatch.setitem(WEIGHT_FILES, "googlenet", entry)
    assert main(["weights"]) == 0
    out = capsys.readouterr().out
    assert "bn_inception: missing" in out
    assert f"googlenet: ok sha256:{entry.sha256}" in out
    assert "http://data.lip6.fr/cadene/pretrainedmodels/bn_inception-52deb4733.pth" in out


def test_corrupt_file_and_offline_fetch_are_one_line_errors(tmp_path, monkeypatch, capsys):
    monkeypatch.setenv("DML_WEIGHTS_DIR", str(tmp_path))
    monkeypatch.setenv("DML_OFFLINE", "1")
    (tmp_path / "resnet50-0676ba61.pth").write_bytes(b"not the weights")
    assert main(["weights", "resnet50"]) == 2
    assert "sha256 does not match resnet50-0676ba61.pth" in capsys.readouterr().err
    assert main(["weights", "--fetch", "bn_inception"]) == 2
    out, err = capsys.readouterr()
    assert "bn_inception: failed: " in out and "Downloads are off" in out
    assert (
        err
        == "error: weights: 1 of 1 files not fetched (bn_inception); the lines above say why and where each was tried\n"
    )
    assert main(["weights", "vgg"]) == 2


def test_an_unknown_backbone_argument_is_named_as_typed_with_the_known_ones(capsys):
    assert main(["weights", "googlenet", "vgg16"]) == 2
    expected = "NAME: unknown backbone with a weight file 'vgg16'; expected one of bn_inception, googlenet, resnet50"
    assert expected in capsys.readouterr().err


def test_fetch_tries_every_file_and_fails_only_after_all(tmp_path, monkeypatch, capsys, http_server):
    url, served = http_server
    monkeypatch.setenv("DML_WEIGHTS_DIR", str(tmp_path / "cache"))
    monkeypatch.delenv("HF_HUB_OFFLINE", raising=False)
    monkeypatch.delenv("DML_OFFLINE", raising=False)
    contents = {name: f"{name} weights".encode() for name in WEIGHT_FILES}
    for name, content in contents.items():
        monkeypatch.setitem(WEIGHT_FILES, name, dataclasses.replace(WEIGHT_FILES[name], sha256=_sha256(content)))
    served.statuses["/lip6/bn_inception-52deb4733.pth"] = 503  # BN-Inception's host is down, its mirror too
    served.files["/googlenet-1378be20.pth"] = contents["googlenet"]
    (tmp_path / "cache").mkdir()
    (tmp_path / "cache" / "resnet50-0676ba61.pth").write_bytes(contents["resnet50"])
    bn_urls = [f"{url}/lip6/bn_inception-52deb4733.pth", f"{url}/mirror/bn_inception-52deb4733.pth"]
    use_catalog(
        monkeypatch,
        tmp_path / "catalog.yaml",
        {},
        {
            name: (WEIGHT_FILES[name].file_name, WEIGHT_FILES[name].sha256, urls)
            for name, urls in {
                "bn_inception": bn_urls,
                "googlenet": [f"{url}/googlenet-1378be20.pth"],
                "resnet50": [f"{url}/resnet50-0676ba61.pth"],
            }.items()
        },
    )
    assert main(["weights", "--fetch"]) == 2
    out, err = capsys.readouterr()
    lines = [line for line in out.splitlines() if not line.startswith("  ")]
    assert lines[0].startswith("bn_inception: failed: ") and all(bn_url in lines[0] for bn_url in bn_urls)
    assert "HTTP 503 Service Unavailable" in lines[0] and "HTTP 404 Not Found" in lines[0]
    assert lines[1:] == [
        f"googlenet: fetched sha256:{_sha256(contents['googlenet'])}",
        f"resnet50: present sha256:{_sha256(contents['resnet50'])}",
    ]
    assert f"  sources {', '.join(bn_urls)}" in out
    assert "bn_inception-52deb4733.pth: 127.0.0.1" in err and "; trying the next source" in err
    assert err.endswith("error: weights: 1 of 3 files not fetched (bn_inception); the lines above say why and where "
                        "each was tried\n")  # fmt: skip
    assert (tmp_path / "cache" / "googlenet-1378be20.pth").read_bytes() == contents["googlenet"]


def _sha256(content: bytes) -> str:
    return hashlib.sha256(content).hexdigest()


def test_a_paper_key_fetches_what_its_runs_load_and_nothing_else(tmp_path, monkeypatch, capsys, http_server):
    url, served = http_server
    monkeypatch.setenv("DML_WEIGHTS_DIR", str(tmp_path / "cache"))
    monkeypatch.delenv("HF_HUB_OFFLINE", raising=False)
    contents = {name: f"{name} weights".encode() for name in WEIGHT_FILES}
    for name, content in contents.items():
        monkeypatch.setitem(WEIGHT_FILES, name, dataclasses.replace(WEIGHT_FILES[name], sha256=_sha256(content)))
        served.files[f"/{name}.pth"] = content
    served.statuses["/bn_inception.pth"] = 503  # damlrrm never loads BN-Inception: its host being down is no matter
    use_catalog(
        monkeypatch,
        tmp_path / "catalog.yaml",
        {},
        {name: (WEIGHT_FILES[name].file_name, WEIGHT_FILES[name].sha256, [f"{url}/{name}.pth"]) for name in contents},
    )
    assert main(["weights", "damlrrm", "--only", "ours-cub200"]) == 0
    assert capsys.readouterr().out.startswith("damlrrm: its runs ours-cub200 load googlenet\ngooglenet: missing\n")
    assert main(["weights", "--fetch", "damlrrm"]) == 0
    out = capsys.readouterr().out
    assert out.startswith("damlrrm: its runs load googlenet\ngooglenet: fetched sha256:")
    assert "bn_inception" not in out and served.ranges == [None]  # one request: GoogLeNet's
    assert main(["weights", "--fetch", "damlrrm"]) == 0
    assert "googlenet: present sha256:" in capsys.readouterr().out
    assert main(["weights", "--only", "ours-cub200"]) == 2
    assert "--only: chooses runs of one paper key, found 0" in capsys.readouterr().err
