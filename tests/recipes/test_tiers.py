"""How the smoke and mini tiers shrink a recipe, and what they keep."""

import pytest

from dml_core.errors import InputError
from dml_core.recipes import load_recipe, mini_version, smoke_version
from dml_core.recipes.tiers import MINI_BN_BATCHES
from tests.recipes.recipe_tree import BASE, write_recipe


def test_smoke_version_shrinks_and_keeps_the_schedule_shape(tmp_path):
    smoke = smoke_version(load_recipe(write_recipe(tmp_path, BASE)))
    assert smoke.data.dataset == "embedded"
    assert smoke.model.weights == "random"
    assert smoke.training.iterations == 60
    assert smoke.schedule.milestones == [15, 30]  # 1000/4000 and 2000/4000 of 60 iterations
    assert smoke.data.transforms.crop_size == 64


def test_mini_version_shrinks_what_must_and_keeps_the_rest(tmp_path):
    tree = {
        **BASE,
        "model": {**BASE["model"], "frozen_bn": True},
        "optimizer": {**BASE["optimizer"], "new_layer_lr_multiplier": 10.0},
    }
    tree["mini"] = {"iterations": 400, "trunk_lr_scale": 20.0, "sampler_params": {"classes_per_batch": 4}}
    recipe = load_recipe(write_recipe(tmp_path, tree))
    mini = mini_version(recipe)
    assert mini.data.dataset == "embedded_mini" and mini.model.weights == "random"
    assert (mini.model.width, mini.model.measure_bn_batches) == (0.25, MINI_BN_BATCHES)
    assert mini.training.iterations == 400 and mini.training.evaluate_at_start
    assert mini.training.eval_every == 400  # before the first update and at the end only
    assert mini.schedule.milestones == [100, 200]  # 1000/4000 and 2000/4000 of 400 iterations
    # the backbone's rate x 20; the new layers' (1e-4) and the loss's own (1e-5) rates stay the recipe's
    assert mini.optimizer.lr == pytest.approx(2e-4)
    assert mini.optimizer.lr * mini.optimizer.new_layer_lr_multiplier == pytest.approx(1e-4)
    assert mini.optimizer.lr * mini.loss.lr_multiplier == pytest.approx(1e-5)
    assert mini.sampler.params == {"classes_per_batch": 4, "images_per_class": 4}  # K kept
    assert mini.model.frozen_bn and mini.loss.params == recipe.loss.params and mini.model.head == recipe.model.head
    assert mini.evaluation.metrics == ["recall", "nmi", "f1", "map_at_r", "r_precision"]
    assert mini.content_hash() != recipe.content_hash()


def test_a_glyph_pretrained_mini_start_keeps_its_own_bn_statistics_and_is_hashed_only_when_asked_for(tmp_path):
    recipe = load_recipe(write_recipe(tmp_path, {**BASE, "mini": {"iterations": 40}}))
    stated = load_recipe(write_recipe(tmp_path, {**BASE, "mini": {"iterations": 40, "start": "random"}}))
    warm = load_recipe(write_recipe(tmp_path, {**BASE, "mini": {"iterations": 40, "start": "glyph-pretrained"}}))
    assert stated.mini_hash() == recipe.mini_hash() != warm.mini_hash()
    mini = mini_version(warm)
    assert (mini.model.weights, mini.model.measure_bn_batches) == ("glyph-pretrained", 0)
    assert mini.content_hash() != mini_version(recipe).content_hash()
    with pytest.raises(InputError, match=r"mini\.start"):
        load_recipe(write_recipe(tmp_path, {**BASE, "mini": {"start": "imagenet"}}))


def test_mini_epochs_scale_the_backbone_warm_up_and_an_epoch_schedule(tmp_path):
    tree = {**BASE, "model": {**BASE["model"], "freeze_backbone_epochs": 5}, "training": {"epochs": 20}}
    tree["schedule"] = {"name": "step", "unit": "epoch", "step_size": 10}
    tree["evaluation"] = {"metrics": ["recall"]}
    recipe = load_recipe(write_recipe(tmp_path, {**tree, "mini": {"epochs": 8}}))
    mini = mini_version(recipe)
    assert (mini.training.epochs, mini.training.iterations, mini.training.eval_every) == (8, None, 8)
    assert mini.model.freeze_backbone_epochs == 2  # a quarter of the run, as 5 of 20
    assert (mini.schedule.unit, mini.schedule.step_size) == ("epoch", 4)
    assert mini.evaluation.metrics == ["recall", "nmi"]  # NMI added for the mini page
    with pytest.raises(InputError, match=r"field mini\.iterations: the backbone warm-up counts epochs"):
        mini_version(load_recipe(write_recipe(tmp_path, tree)))
    counted_in_iterations = {**BASE, "mini": {"epochs": 8}}
    with pytest.raises(InputError, match=r"field mini\.epochs: the recipe counts iterations"):
        mini_version(load_recipe(write_recipe(tmp_path, counted_in_iterations)))
    with pytest.raises(InputError, match=r"field mini: .*exactly one of iterations or epochs"):
        load_recipe(write_recipe(tmp_path, {**tree, "mini": {"epochs": 8, "iterations": 10}}))
