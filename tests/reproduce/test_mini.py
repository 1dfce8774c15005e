"""The mini tier of the paper runner: it plans the headline comparison of ``mini.yaml`` (three seeds, the mini
versions, its own folders, no linear plans), checks the file, and (slow) trains a tiny comparison end to end
through ``dml reproduce --mini``: results with an untrained evaluation, the mini page, finished runs skipped."""

from pathlib import Path

import pytest
import yaml

from dml_core.cli import main
from dml_core.errors import InputError
from dml_core.output_paths import RECIPES_DIR
from dml_core.recipes import load_catalog, load_paper
from dml_core.recipes.mini import load_mini_comparison, main_run_references, main_runs, mini_runs
from dml_core.results import load_results
from dml_core.runner.inline import PaperRun
from dml_core.runner.plan import MINI_SEEDS, plan_runs
from dml_core.runner.preflight import recipe_problems
from dml_core.tier import Tier
from dml_core.vocabulary import PAPER_KEYS
from tests.tables.synthetic import PAPER_KEY, TINY_SMOKE, write_papers_dir, write_recipe

COMPARISON = {
    "proposed": "ours-cub200", "baselines": ["lifted-cub200"], "claim": "OURS beats Lifted.", "why": "a test",
    "main": "ours-cub200",
}  # fmt: skip
# Recipe fields whose mini version trains in seconds: the narrowest backbone, tiny images, 4 steps.
TINY_MINI = {
    **TINY_SMOKE,
    "mini": {"iterations": 4, "image_size": 32, "resize": 36, "backbone_width": 0.125,
             "sampler_params": {"classes_per_batch": 4, "images_per_class": 2}},
}  # fmt: skip


def _paper(tmp_path, **options) -> PaperRun:
    recipes = tmp_path / "reproduce"
    for run_id in ("ours-cub200", "lifted-cub200", "npair-cub200"):
        write_recipe(recipes, id=run_id, targets=[{"table": "table1", "row": run_id}], **TINY_MINI)
    (recipes / PAPER_KEY / "mini.yaml").write_text(yaml.safe_dump(COMPARISON))
    return PaperRun(
        PAPER_KEY, recipes_dir=recipes, runs_root=tmp_path / "runs", results_root=tmp_path / "results",
        tables_root=tmp_path / "tables", tier=Tier.MINI, **options,
    )  # fmt: skip


def test_mini_plans_the_headline_comparison_over_three_seeds_in_its_own_folders(tmp_path):
    plans, linear, _, _ = _paper(tmp_path).preflight()
    assert [(p.recipe.id, p.recipe.training.seed) for p in plans] == [
        (run_id, seed) for run_id in ("ours-cub200", "lifted-cub200") for seed in MINI_SEEDS
    ]
    assert linear == [] and MINI_SEEDS == (0, 1, 2)
    first = plans[0]
    assert first.tier == Tier.MINI
    assert first.results_path == tmp_path / "results" / "mini" / PAPER_KEY / "ours-cub200-seed0.json"
    assert first.run_dir == tmp_path / "runs" / "mini" / PAPER_KEY / "ours-cub200-seed0"
    recipe = first.recipe
    assert (recipe.data.dataset, recipe.model.weights, recipe.model.width) == ("embedded_mini", "random", 0.125)
    assert recipe.training.evaluate_at_start and recipe.training.iterations == 4
    seeds = _paper(tmp_path, seeds=[5], only=["lifted-cub200"]).preflight()[0]
    assert [(p.recipe.id, p.recipe.training.seed) for p in seeds] == [("lifted-cub200", 5)]


def test_a_missing_or_wrong_mini_file_stops_the_paper_naming_it(tmp_path):
    paper = _paper(tmp_path)
    path = tmp_path / "reproduce" / PAPER_KEY / "mini.yaml"
    path.write_text(yaml.safe_dump({**COMPARISON, "baselines": ["lifted-cub200", "nope-cub200"]}))
    with pytest.raises(InputError, match=rf"{path}: expected run ids of {PAPER_KEY}, found nope-cub200"):
        paper.preflight()
    path.unlink()
    with pytest.raises(InputError, match=rf"{path}: not found; the mini tier of {PAPER_KEY} needs"):
        paper.preflight()


def test_mini_yaml_is_not_a_recipe_file(tmp_path):
    _paper(tmp_path)
    catalog = load_catalog(tmp_path / "reproduce", papers=[PAPER_KEY])
    assert [run.id for run in catalog[PAPER_KEY].runs] == ["lifted-cub200", "npair-cub200", "ours-cub200"]


@pytest.mark.parametrize("key", PAPER_KEYS)
def test_every_paper_names_a_headline_comparison_of_its_own_runs_whose_mini_versions_are_valid(key):
    comparison = load_mini_comparison(RECIPES_DIR, key)
    paper = load_paper(key)
    runs = mini_runs(paper, comparison, "mini.yaml")
    plans = plan_runs(key, runs, MINI_SEEDS, Tier.MINI, Path("runs"), Path("results"))
    assert recipe_problems(plans) == []
    assert {plan.recipe.data.dataset for plan in plans} == {"embedded_mini"}


def test_each_paper_declares_its_main_run_beside_its_comparison_and_it_is_one_of_its_runs():
    """The main run (the training benchmark's and the GPU check's) is declared in the paper's folder, so adding a
    paper adds its main run there; it is a run of the paper at full scale, its method on CUB-200-2011."""
    mains = main_runs()
    assert list(mains) == list(PAPER_KEYS)
    for key, run_id in mains.items():
        recipe = load_paper(key).run(run_id).recipe()
        assert recipe.data.dataset == "cub200" and recipe.model.weights == "pretrained", key
    assert main_run_references()[0] == f"{PAPER_KEYS[0]}/{mains[PAPER_KEYS[0]]}"


def test_a_mini_file_without_a_main_run_is_refused_naming_the_field(tmp_path):
    _paper(tmp_path)
    path = tmp_path / "reproduce" / PAPER_KEY / "mini.yaml"
    path.write_text(yaml.safe_dump({key: value for key, value in COMPARISON.items() if key != "main"}))
    with pytest.raises(InputError, match=rf"{path}: .*main"):
        main_runs(tmp_path / "reproduce", [PAPER_KEY])


@pytest.mark.slow
def test_a_mini_reproduction_trains_evaluates_before_and_after_and_writes_its_page(tmp_path, capsys, copy_glyph_sets):
    _paper(tmp_path)
    copy_glyph_sets(tmp_path / "data", "embedded_mini")
    args = [
        "reproduce", PAPER_KEY, "--mini", "--seeds", "1", "--no-progress",
        "--recipes", str(tmp_path / "reproduce"), "--runs", str(tmp_path / "runs"),
        "--results", str(tmp_path / "results"), "--tables", str(tmp_path / "tables"),
        "--papers-dir", str(write_papers_dir(tmp_path)), "--data-root", str(tmp_path / "data"),
    ]  # fmt: skip
    assert main(args) == 0
    out = capsys.readouterr().out
    assert "ours-cub200 seed 1: training (mini)" in out and "2 trained, 0 skipped" in out
    results = load_results(tmp_path / "results" / "mini" / PAPER_KEY / "ours-cub200-seed1.json")
    assert results.mini and not results.smoke and results.backbone_width == 0.125
    assert [e.iteration for e in results.evaluations] == [0, 4] and results.untrained is results.evaluations[0]
    assert {"R@1", "NMI"} <= set(results.untrained.metrics)
    assert results.dataset == "embedded_mini"
    text = (tmp_path / "tables" / "mini" / f"{PAPER_KEY}.md").read_text()
    assert "NOT a reproduction of the paper" in text and "| ours-cub200 | proposed |" in text
    assert "| ours-cub200 > lifted-cub200 |" in text
    assert not (tmp_path / "runs" / "mini" / PAPER_KEY / "ours-cub200-seed1" / "checkpoint.pt").exists()
    assert main(args) == 0
    assert "0 trained, 2 skipped" in capsys.readouterr().out
    # Each run trains in its own process on one CPU thread, so alone it gives the same numbers as beside another.
    side_by_side = _metrics(tmp_path / "results" / "mini" / PAPER_KEY, "ours-cub200")
    assert main([*args, "--rerun", "--workers", "1", "--only", "ours-cub200"]) == 0
    out = capsys.readouterr().out
    assert "1 run in 1 worker process, one CPU thread each" in out and "1 trained, 0 skipped" in out
    assert _metrics(tmp_path / "results" / "mini" / PAPER_KEY, "ours-cub200") == side_by_side
    assert {load_results(p).environment["cpu_threads"] for p in (tmp_path / "results").rglob("*.json")} == {1}


def _metrics(results_dir: Path, run_id: str) -> dict[str, list]:
    return {
        path.name: [(e.iteration, e.metrics) for e in load_results(path).evaluations]
        for path in sorted(results_dir.glob(f"{run_id}-seed*.json"))
    }


def test_workers_is_a_mini_tier_option(tmp_path, capsys):
    assert main(["reproduce", PAPER_KEY, "--workers", "2", "--recipes", str(tmp_path)]) == 2
    assert "--workers 2: only with --mini" in capsys.readouterr().err
