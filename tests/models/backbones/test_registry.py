"""The backbone registry and ``build_backbone``: declarations, weights identity, weight-file errors."""

from __future__ import annotations

import dataclasses

import pytest
import torch

from dml_core.errors import InputError
from dml_core.input_spec import InputSpec
from dml_core.models.backbones import BACKBONES, build_backbone
from dml_core.models.backbones.bn_inception import BNInception
from dml_core.models.weights import RANDOM_INIT, WEIGHT_FILES, file_sha256


@pytest.mark.parametrize("name", sorted(BACKBONES))
def test_declared_feature_sizes_match_the_maps_at_smoke_size(name):
    backbone = build_backbone(name, weights="random").eval()
    assert isinstance(backbone.input_spec, InputSpec)
    assert backbone.weights_id == RANDOM_INIT
    with torch.no_grad():
        levels = backbone.forward_levels(torch.randn(2, 3, 64, 64))
        final = backbone(torch.randn(2, 3, 64, 64))
    assert tuple(levels) == backbone.level_names
    assert {level: value.shape[1] for level, value in levels.items()} == dict(backbone.level_dims)
    assert final.shape[:2] == (2, backbone.feature_dim)
    assert backbone.level_dims[backbone.level_names[-1]] == backbone.feature_dim


def test_expected_registry_contents():
    assert {name: (cls.input_spec.channel_order, cls.feature_dim) for name, cls in BACKBONES.items()} == {
        "bn_inception": ("BGR", 1024),
        "googlenet": ("RGB", 1024),
        "resnet50": ("RGB", 2048),
    }
    assert set(WEIGHT_FILES) == set(BACKBONES)


@pytest.mark.parametrize("name", ["bn_inception", "googlenet"])
def test_a_narrowed_backbone_has_the_same_layers_with_fewer_channels(name):
    full, narrow = build_backbone(name, weights="random"), build_backbone(name, weights="random", width=0.25)
    assert narrow.width == 0.25 and narrow.feature_dim == full.feature_dim // 4
    assert dict(narrow.level_dims) == {level: dim // 4 for level, dim in full.level_dims.items()}
    assert [type(m) for m in narrow.modules()] == [type(m) for m in full.modules()]  # the same family, layer by layer
    assert sum(p.numel() for p in narrow.parameters()) < sum(p.numel() for p in full.parameters()) / 8
    with torch.no_grad():
        levels = narrow.eval().forward_levels(torch.randn(2, 3, 64, 64))
    assert {level: value.shape[1] for level, value in levels.items()} == dict(narrow.level_dims)


def test_a_narrowed_backbone_takes_random_weights_and_a_known_width_only():
    with pytest.raises(InputError, match=r"model\.width 0\.5: a narrowed googlenet has no published weights"):
        build_backbone("googlenet", weights="pretrained", width=0.5)
    with pytest.raises(
        InputError, match=r"model.width: googlenet is built with widths 1.0, 0.5, 0.25, 0.125, found 0.3"
    ):
        build_backbone("googlenet", weights="random", width=0.3)
    with pytest.raises(InputError, match=r"model\.width: resnet50 is built with widths 1\.0, found 0\.25"):
        build_backbone("resnet50", weights="random", width=0.25)


def test_unknown_backbone_is_an_input_error():
    with pytest.raises(
        InputError,
        match=r"^field model\.backbone: unknown backbone 'vgg16'; expected one of bn_inception, googlenet, resnet50$",
    ):
        build_backbone("vgg16", weights="random")


def test_pretrained_offline_without_the_file_fails_at_once_naming_file_hash_and_source(tmp_path, monkeypatch):
    monkeypatch.setenv("DML_WEIGHTS_DIR", str(tmp_path))
    monkeypatch.setenv("DML_OFFLINE", "1")
    with pytest.raises(InputError) as error:
        build_backbone("bn_inception")
    message = str(error.value)
    assert "bn_inception-52deb4733.pth" in message
    assert "52deb4733" in message
    assert "http://data.lip6.fr/cadene/pretrainedmodels/bn_inception-52deb4733.pth" in message
    assert str(tmp_path) in message


def _published_bn_inception_file(tmp_path, monkeypatch):
    """A file in the published layout (with classifier) and a table entry whose prefix matches it."""
    state = BNInception().state_dict()
    state["last_linear.weight"] = torch.zeros(1000, 1024)
    state["last_linear.bias"] = torch.zeros(1000)
    path = tmp_path / "bn_inception-fixture.pth"
    torch.save(state, path)
    entry = dataclasses.replace(WEIGHT_FILES["bn_inception"], sha256=file_sha256(path)[:9])
    monkeypatch.setitem(WEIGHT_FILES, "bn_inception", entry)
    return path, state


def test_explicit_weight_file_loads_and_records_its_identity(tmp_path, monkeypatch):
    path, state = _published_bn_inception_file(tmp_path, monkeypatch)
    backbone = build_backbone("bn_inception", weights=path)
    assert backbone.weights_id == f"bn_inception-52deb4733.pth sha256:{file_sha256(path)}"
    torch.testing.assert_close(backbone.conv1_7x7_s2.weight, state["conv1_7x7_s2.weight"], rtol=0, atol=0)


def test_cached_weight_file_is_found_in_DML_WEIGHTS_DIR(tmp_path, monkeypatch):
    path, _ = _published_bn_inception_file(tmp_path, monkeypatch)
    cache = tmp_path / "cache"
    cache.mkdir()
    path.rename(cache / "bn_inception-52deb4733.pth")
    monkeypatch.setenv("DML_WEIGHTS_DIR", str(cache))
    assert build_backbone("bn_inception").weights_id.startswith("bn_inception-52deb4733.pth sha256:")


def test_file_with_the_right_hash_but_wrong_architecture_is_an_input_error(tmp_path, monkeypatch):
    path = tmp_path / "not-bn-inception.pth"
    torch.save({"conv1.weight": torch.zeros(1)}, path)
    entry = dataclasses.replace(WEIGHT_FILES["bn_inception"], sha256=file_sha256(path))
    monkeypatch.setitem(WEIGHT_FILES, "bn_inception", entry)
    with pytest.raises(InputError, match="not a bn_inception state dict"):
        build_backbone("bn_inception", weights=path)


def test_wrong_file_is_refused_by_its_hash(tmp_path):
    path = tmp_path / "bn_inception-52deb4733.pth"
    torch.save({"x": torch.zeros(1)}, path)
    with pytest.raises(InputError, match=r"sha256 does not match bn_inception-52deb4733\.pth"):
        build_backbone("bn_inception", weights=path)
