"""``dml recipes`` lists and shows the expanded runs; ``dml train`` takes a run id and readings."""

import pytest
import yaml

from dml_core.cli import main
from dml_core.output_paths import RECIPES_DIR
from dml_core.results import load_results


def test_list_shows_every_run_with_its_targets(capsys):
    assert main(["recipes", "list", "--paper", "damlrrm"]) == 0
    out = capsys.readouterr().out
    assert out.startswith("damlrrm (18 runs)")
    assert "ours-cub200  ->  table1/ours-cub200, table4/ours-alpha-30-cub200" in out
    assert "[readings: damlrrm.lr]" in out


def test_list_shows_the_fair_studys_runs_with_their_datasets(capsys):
    assert main(["recipes", "list", "--paper", "fair"]) == 0
    out = capsys.readouterr().out
    assert out.startswith("fair (22 runs)")
    study = "no published row (a study's run)"
    assert f"  damlrrm-cars196  ->  {study}  on cars196  [readings: fair.search-point]  (methods.yaml)" in out
    assert f"  npair-cub200  ->  {study}  on cub200  [readings: fair.search-point]  (baselines.yaml)" in out
    assert f"  multi-similarity-paired-cub200  ->  {study}  on cub200  (controls.yaml)" in out


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


@pytest.mark.parametrize(("paper", "precision"), [("gpw", "fp32"), ("anml", "fp32")])
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
@pytest.mark.usefixtures("glyph_data_root")
def test_train_takes_a_run_id_and_keeps_set_overrides_after_the_smoke_shrink(tmp_path, monkeypatch):
    monkeypatch.setenv("DML_DATA_ROOT", str(tmp_path / "data"))
    out = tmp_path / "run"
    args = ["train", "ours-sop", "--smoke", "--reading", "damlrrm.lr=1e-3", "--reading", "precision=bf16"]
    args += ["--set", "training.iterations=1", "--set", "training.eval_every=1"]
    assert main([*args, "--out", str(out), "--no-progress"]) == 0
    results = load_results(out / "results.json")
    assert results.recipe.id == "ours-sop" and results.recipe.path == "reproduce/damlrrm/ours.yaml"
    assert results.recipe.content["readings"]["damlrrm.lr"] == "1e-3"
    # the shared reading precision at bf16, and the CPU's forward in fp32 whatever it says
    assert results.recipe.content["readings"]["precision"] == "bf16" and results.precision == "fp32"
    assert results.timing.iterations == 1 and results.smoke


@pytest.mark.slow
@pytest.mark.usefixtures("glyph_data_root")
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


def test_show_prints_a_recipe_file_that_trains_to_the_same_hash_for_every_run(tmp_path):
    from dml_core.commands.recipes import recipe_file_text
    from dml_core.recipes import load_catalog
    from dml_core.recipes.catalog import run_of_file

    path = tmp_path / "shown.yaml"
    runs = [run for paper in load_catalog().values() for run in paper.runs]
    assert len(runs) > 150
    seen_readings = set()
    for run in runs:
        # the defaults, and another value of each reading on the first run that rests on it (the variant's name kept)
        others = [name for name in run.reading_names if name not in seen_readings]
        seen_readings.update(others)
        for choices in [{}, *({name: _other_value(run, name)} for name in others)]:
            expected = run.recipe(choices)
            path.write_text(recipe_file_text(run, choices))
            shown = run_of_file(path).recipe()
            assert (shown.content_hash(), shown.run_name) == (expected.content_hash(), expected.run_name), run.id
            assert shown.model_dump() == expected.model_dump(), run.id
    text = path.read_text()
    assert "extends" not in text and "# readings applied: " in text


@pytest.mark.parametrize("flag", ["--smoke", "--mini"])
def test_show_prints_the_tier_version_a_tier_flag_would_train(flag, capsys):
    from dml_core.recipes import find_run
    from dml_core.recipes.tiers import TIER_VERSIONS
    from dml_core.tier import Tier

    assert main(["recipes", "show", "drml/drml-pa-cub200", flag]) == 0
    out = capsys.readouterr().out
    tier = Tier(flag.removeprefix("--"))
    expected = TIER_VERSIONS[tier](find_run("drml/drml-pa-cub200").recipe())
    assert f"# run drml/drml-pa-cub200 ({tier} version)" in out
    assert f"# content hash {expected.content_hash()}" in out
    assert yaml.safe_load(out)["data"]["dataset"] == expected.data.dataset != "cub200"


def _other_value(run, name: str) -> str:
    return next(value for value in run.paper_assumptions.readings[name].values if value != run.default_reading(name))


def test_a_shown_recipe_keeps_its_provenance_and_is_refused_inside_a_paper_folder(tmp_path, capsys):
    assert main(["recipes", "show", "damlrrm/npair-cub200", "--reading", "damlrrm.lr=1e-3"]) == 0
    out = capsys.readouterr().out
    assert "# readings applied: precision=fp32 (default), selection=best-r1 (default), damlrrm.lr=1e-3\n" in out
    assert "# declared in reproduce/damlrrm/baselines.yaml <- reproduce/damlrrm/base.yaml" in out
    shown = yaml.safe_load(out)
    assert shown["readings"]["damlrrm.lr"] == "1e-3" and shown["variant"] == "damlrrm.lr=1e-3"
    assert shown["assumptions"]["npair-pairs"].startswith("N = 60 pairs per batch")
    folder = tmp_path / "damlrrm"
    folder.mkdir()
    (folder / "assumptions.yaml").write_text((RECIPES_DIR / "damlrrm" / "assumptions.yaml").read_text())
    (folder / "shown.yaml").write_text(out)
    assert main(["recipes", "show", str(folder / "shown.yaml")]) == 2
    assert "shown.yaml: field readings: expected {name: {value: settings}} in a paper folder" in capsys.readouterr().err


@pytest.mark.slow
@pytest.mark.usefixtures("glyph_data_root")
def test_train_trains_a_shown_recipe_file_as_the_run_it_was_shown_from(tmp_path, monkeypatch, capsys):
    monkeypatch.setenv("DML_DATA_ROOT", str(tmp_path / "data"))
    short = ["--smoke", "--set", "training.iterations=1", "--set", "training.eval_every=1", "--no-progress"]
    assert main(["recipes", "show", "ours-sop", "--reading", "damlrrm.lr=1e-3"]) == 0
    shown = tmp_path / "shown.yaml"
    shown.write_text(capsys.readouterr().out)
    assert main(["train", str(shown), *short, "--out", str(tmp_path / "from-file")]) == 0
    args = ["train", "ours-sop", "--reading", "damlrrm.lr=1e-3", *short, "--out", str(tmp_path / "from-id")]
    assert main(args) == 0
    from_file, from_id = (load_results(tmp_path / name / "results.json") for name in ("from-file", "from-id"))
    assert from_file.recipe.sha256 == from_id.recipe.sha256
    assert from_file.recipe.content["variant"] == "damlrrm.lr=1e-3"
