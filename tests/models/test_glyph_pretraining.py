"""The glyph-pretrained start of the mini tier: deterministic, cached, checked when read, recorded by name."""

from pathlib import Path

import pytest
import torch

from dml_core.data.sources.embedded import class_codes
from dml_core.errors import InputError
from dml_core.models import glyph_pretraining
from dml_core.models.glyph_pretraining import (
    GlyphPretraining,
    glyph_pretrained_backbone,
    pretrain_on_glyphs,
    pretraining_codes,
)
from dml_core.models.weights import file_sha256
from dml_core.recipes.settings import Recipe
from dml_core.training.builders import build_model

QUICK = GlyphPretraining(steps=3, images_per_class=2, batch_size=8)  # seconds, not minutes
WIDTH = 0.125


def test_the_pretraining_classes_are_none_of_the_mini_sets():
    codes = pretraining_codes()
    assert len(codes) == 113 and not set(codes) & set(class_codes())


def test_pretraining_is_a_function_of_its_settings_and_leaves_the_callers_state_alone():
    torch.manual_seed(123)
    rng_before, threads_before = torch.get_rng_state(), torch.get_num_threads()
    first = pretrain_on_glyphs("googlenet", WIDTH, QUICK)
    assert torch.equal(torch.get_rng_state(), rng_before) and torch.get_num_threads() == threads_before
    torch.manual_seed(7)  # another caller's seed does not change it
    second = pretrain_on_glyphs("googlenet", WIDTH, QUICK)
    assert first["state_dict"].keys() == second["state_dict"].keys()
    assert all(torch.equal(first["state_dict"][key], second["state_dict"][key]) for key in first["state_dict"])
    other_seed = pretrain_on_glyphs(
        "googlenet", WIDTH, GlyphPretraining(steps=3, images_per_class=2, batch_size=8, seed=2)
    )
    assert not all(torch.equal(first["state_dict"][k], other_seed["state_dict"][k]) for k in first["state_dict"])
    untrained = pretrain_on_glyphs("googlenet", WIDTH, GlyphPretraining(steps=0, images_per_class=2))
    moved = [key for key, value in first["state_dict"].items() if value.is_floating_point()]
    assert any(not torch.equal(first["state_dict"][key], untrained["state_dict"][key]) for key in moved)


def test_the_backbone_is_pretrained_once_cached_and_named_by_its_file(tmp_path, monkeypatch):
    backbone = glyph_pretrained_backbone("googlenet", WIDTH, tmp_path, QUICK)
    cached = tmp_path / "glyph_pretrained" / QUICK.file_name("googlenet", WIDTH)
    assert cached.is_file()
    assert backbone.weights_id == f"glyph-pretrained {cached.name} sha256:{file_sha256(cached)}"
    stored = torch.load(cached, weights_only=True)["state_dict"]
    assert all(torch.equal(value, stored[key]) for key, value in backbone.state_dict().items())

    def no_pretraining(*args, **kwargs):
        raise AssertionError("the cached file should have been used")

    monkeypatch.setattr(glyph_pretraining, "pretrain_on_glyphs", no_pretraining)
    again = glyph_pretrained_backbone("googlenet", WIDTH, tmp_path, QUICK)
    assert all(torch.equal(value, stored[key]) for key, value in again.state_dict().items())


def test_a_cached_file_of_other_settings_or_none_at_all_is_an_error_naming_it(tmp_path):
    cached = tmp_path / "glyph_pretrained" / QUICK.file_name("googlenet", WIDTH)
    cached.parent.mkdir()
    cached.write_bytes(b"not a torch file")
    with pytest.raises(InputError, match=rf"{cached}: not a glyph-pretraining file .*delete it to pretrain again"):
        glyph_pretrained_backbone("googlenet", WIDTH, tmp_path, QUICK)
    torch.save({**pretrain_on_glyphs("googlenet", WIDTH, QUICK), "width": 0.25}, cached)
    with pytest.raises(InputError, match=rf"{cached}: expected the glyph pretraining .*'width': 0.125.* found .*0.25"):
        glyph_pretrained_backbone("googlenet", WIDTH, tmp_path, QUICK)


def _mini_recipe(weights: str) -> Recipe:
    return Recipe.model_validate(
        {
            "id": "glyph-start",
            "data": {"dataset": "embedded"},
            "model": {"backbone": "googlenet", "width": WIDTH, "weights": weights},
            "loss": {"name": "triplet"},
            "sampler": {"name": "pk", "params": {"classes_per_batch": 4, "images_per_class": 2}},
            "optimizer": {"name": "sgd", "lr": 0.01},
            "training": {"iterations": 1},
        }
    )


def test_the_model_builder_starts_from_the_cached_glyph_weights(tmp_path, monkeypatch):
    monkeypatch.setattr(glyph_pretraining, "MINI_START", QUICK)
    model = build_model(_mini_recipe("glyph-pretrained"), Path(tmp_path))
    assert model.weights_id.startswith("glyph-pretrained googlenet-w0.125-3steps")
    with pytest.raises(InputError, match=r"model.weights 'glyph-pretrained': expected a data root"):
        build_model(_mini_recipe("glyph-pretrained"))
    assert build_model(_mini_recipe("random")).weights_id == "random init"
