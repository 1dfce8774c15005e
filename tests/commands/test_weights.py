"""``dml weights``: status listing, hash check and the offline refusal, through the real command line."""

from __future__ import annotations

import dataclasses
import hashlib

from dml_core.cli import main
from dml_core.models.weights import WEIGHT_FILES


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
    expected = (
        "BACKBONE: unknown backbone with a weight file 'vgg16'; expected one of bn_inception, googlenet, resnet50"
    )
    assert expected in capsys.readouterr().err
