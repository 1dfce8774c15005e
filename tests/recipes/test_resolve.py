"""One run under readings, overrides and a tier: the recipe every command and the planner train."""

import pytest

from dml_core.output_paths import REPOSITORY_ROOT
from dml_core.recipes import find_run, load_paper
from dml_core.recipes.resolve import resolve
from dml_core.recipes.tiers import TIER_VERSIONS
from dml_core.results import ResultsFile, load_results
from dml_core.runner.plan import plan_runs
from dml_core.tier import Tier

COMMITTED_RESULTS = sorted((REPOSITORY_ROOT / "results").rglob("*.json"))


def _deep_results():
    loaded = [load_results(path) for path in COMMITTED_RESULTS]
    return [results for results in loaded if isinstance(results, ResultsFile)]


def test_every_committed_results_file_resolves_to_the_recipe_it_recorded():
    deep = _deep_results()
    assert len(deep) > 50
    papers = {key: load_paper(key) for key in {results.paper for results in deep}}
    for results in deep:
        record = results.recipe
        run = papers[results.paper].run(record.id)
        recipe = resolve(run, record.content.get("readings", {}), record.overrides, results.tier)
        assert record.sha256 in recipe.hashes_of_this_computation(), (results.paper, record.id, results.seed)
        # the order the planner used before it called resolve: every override, then the shrink
        assert recipe == TIER_VERSIONS[results.tier](run.recipe(record.content.get("readings"), record.overrides))


@pytest.mark.parametrize("tier", [Tier.SMOKE, Tier.MINI])
def test_an_override_of_a_setting_the_tier_shrinks_is_kept(tier):
    run = find_run("drml/drml-pa-cub200")
    recipe = resolve(run, overrides=["training.iterations=5", "training.eval_every=5"], tier=tier)
    assert (recipe.training.iterations, recipe.training.eval_every) == (5, 5)
    assert recipe.data.dataset != "cub200"  # shrunk all the same


def test_a_tier_override_shapes_the_shrink():
    run = find_run("drml/drml-pa-cub200")
    recipe = resolve(run, overrides=["mini.start=glyph-pretrained", "mini.trunk_lr_scale=1"], tier=Tier.MINI)
    assert recipe.model.weights == "glyph-pretrained"
    assert recipe.optimizer.lr == run.recipe().optimizer.lr


@pytest.mark.parametrize("tier", list(Tier))
def test_the_planner_resolves_each_run_as_the_commands_do(tmp_path, tier):
    run = find_run("cgml/cgml-triplet-cars196")
    (plan,) = plan_runs("cgml", [run], [3], tier, tmp_path / "runs", tmp_path / "results", pipeline="pil")
    assert plan.recipe == resolve(run, {}, ["training.seed=3", "data.pipeline=pil"], tier)
    assert (plan.recipe.training.seed, plan.recipe.data.pipeline) == (3, "pil")
