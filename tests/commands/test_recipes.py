"""``dml recipes`` lists and shows the expanded runs; ``dml train`` takes a run id and readings."""

import pytest
import yaml

from dml_core.cli import main
from dml_core.results import load_results


def test_list_shows_every_run_with_its_targets(capsys):
    assert main(["recipes", "list", "--paper", "damlrrm"]) == 0
    out = capsys.readouterr().out
    assert out.startswith("damlrrm (18 runs)")
    assert "ours-cub200  ->  table1/ours-cub200, table4/ours-alpha-30-cub200" in out
    assert "[readings: damlrrm.lr]" in out


def test_show_prints_the_expanded_recipe_under_a_reading(capsys):
    assert main(["recipes", "show", "damlrrm/ours-cub200", "--reading", "damlrrm.lr=1e-3"]) == 0
    out = capsys.readouterr().out
    assert out.startswith("# run damlrrm/ours-cub200~damlrrm.lr=1e-3")
    assert "reproduce/damlrrm/ours.yaml <- reproduce/damlrrm/base.yaml" in out
    recipe = yaml.safe_load(out)
    assert recipe["optimizer"]["lr"] == 1.0e-3 and recipe["readings"]["damlrrm.lr"] == "1e-3"


def test_an_id_two_papers_share_needs_its_paper_and_a_bad_reading_is_named(capsys):
    assert main(["recipes", "show", "npair-cub200"]) == 2
    assert "name one: damlrrm/npair-cub200, cgml/npair-cub200" in capsys.readouterr().err
    assert main(["recipes", "show", "ours-cub200", "--reading", "damlrrm.lr=1e-2"]) == 2
    assert "--reading damlrrm.lr: expected one of 1e-4, 1e-3, found '1e-2'" in capsys.readouterr().err


def test_readings_lists_question_values_and_default(capsys):
    assert main(["recipes", "readings", "damlrrm"]) == 0
    out = capsys.readouterr().out
    assert "damlrrm.lr  (18 runs rest on it" in out and "1e-4 (default):" in out


@pytest.mark.parametrize(("paper", "precision"), [("gpw", "bf16"), ("anml", "fp32")])
def test_readings_lists_the_shared_readings_with_the_papers_default(capsys, paper, precision):
    assert main(["recipes", "readings", paper]) == 0
    out = capsys.readouterr().out
    other_precision = "fp32" if precision == "bf16" else "bf16"
    for name, default, other in (("precision", precision, other_precision), ("selection", "best-r1", "final")):
        block = out.split(f"{name}  (")[1].split("why the default:")[0]
        assert "shared by every paper (reproduce/readings.yaml)" in block and "question:" in block
        assert f"\n  {default} (default):" in block and f"\n  {other}:" in block
    assert ("anml's own default" in out) == (paper == "anml")
    assert main(["recipes", "list", "--paper", paper]) == 0
    assert "every run rests on the shared readings precision, selection" in capsys.readouterr().out


@pytest.mark.slow
def test_train_takes_a_run_id_and_keeps_set_overrides_after_the_smoke_shrink(tmp_path, monkeypatch):
    monkeypatch.setenv("DML_DATA_ROOT", str(tmp_path / "data"))
    out = tmp_path / "run"
    args = ["train", "ours-sop", "--smoke", "--reading", "damlrrm.lr=1e-3", "--set", "training.iterations=1"]
    assert main([*args, "--set", "training.eval_every=1", "--out", str(out), "--no-progress"]) == 0
    results = load_results(out / "results.json")
    assert results.recipe.id == "ours-sop" and results.recipe.path == "reproduce/damlrrm/ours.yaml"
    assert results.recipe.content["readings"]["damlrrm.lr"] == "1e-3"
    # the shared reading precision at damlrrm's default, bf16, and the CPU's forward in fp32 whatever it says
    assert results.recipe.content["readings"]["precision"] == "bf16" and results.precision == "fp32"
    assert results.timing.iterations == 1 and results.smoke


@pytest.mark.slow
def test_train_applies_mini_overrides_before_the_mini_shrink(tmp_path, monkeypatch):
    from dml_core.models import glyph_pretraining

    monkeypatch.setattr(
        glyph_pretraining, "MINI_START", glyph_pretraining.GlyphPretraining(steps=2, images_per_class=2)
    )
    monkeypatch.setenv("DML_DATA_ROOT", str(tmp_path / "data"))
    out = tmp_path / "run"
    start = ["--set", "mini.start=glyph-pretrained", "--set", "mini.trunk_lr_scale=1"]
    after = ["--set", "training.iterations=1", "--set", "data.dataset=embedded", "--set", "model.width=0.125"]
    assert main(["train", "damlrrm/lifted-cub200", "--mini", *start, *after, "--out", str(out), "--no-progress"]) == 0
    results = load_results(out / "results.json")
    assert results.mini and results.recipe.content["optimizer"]["lr"] == 1.0e-4  # the recipe's own rate
    assert (
        results.weights["requested"] == "glyph-pretrained"
        and results.recipe.content["model"]["measure_bn_batches"] == 0
    )
    (cached,) = (tmp_path / "data" / "glyph_pretrained").iterdir()
    assert results.weights["id"].startswith(f"glyph-pretrained {cached.name} sha256:")
