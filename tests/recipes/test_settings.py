"""Typed recipes: validation errors name the file and field; ranges; overrides; smoke and mini shrinking; the
content hash of the computation only."""

import pytest
import yaml

from dml_core.errors import InputError
from dml_core.recipes import load_recipe, mini_version, smoke_version
from dml_core.recipes.settings import MINI_BN_BATCHES, parse_override

BASE = {
    "id": "demo",
    "paper": "cgml",
    "targets": [{"table": "table3", "row": "cgml-cub200"}],
    "data": {"dataset": "cub200"},
    "model": {"backbone": "googlenet", "embedding_dim": 512},
    "loss": {"name": "triplet", "params": {"margin": 0.1}},
    "sampler": {"name": "pk", "params": {"classes_per_batch": 8, "images_per_class": 4}},
    "optimizer": {"name": "adam", "lr": 1e-5},
    "schedule": {"name": "multistep", "milestones": [1000, 2000], "gamma": 0.5},
    "training": {"iterations": 4000, "eval_every": 500, "bf16": True},  # bf16: its default when the hashes were pinned
}


# BASE's hash before model.width, model.measure_bn_batches, training.evaluate_at_start and data.pipeline "auto" existed
BASE_HASH = "f09a0555d0e155245d78d3b19e3565bba3b6e1714aae1f54d6ed18b672cad4c4"


def _write(tmp_path, tree):
    path = tmp_path / "recipe.yaml"
    path.write_text(yaml.safe_dump(tree))
    return path


def test_loads_and_fills_defaults(tmp_path):
    recipe = load_recipe(_write(tmp_path, BASE))
    assert recipe.model.pooling == "avg"
    assert recipe.evaluation.selection == "best_r1"
    assert recipe.targets[0].row == "cgml-cub200"


@pytest.mark.parametrize(
    ("change", "message"),
    [
        ({"model": {"backbone": "googlenet", "embedding_dimm": 512}}, "field model.embedding_dimm: Extra inputs"),
        ({"optimizer": {"name": "adam", "lr": "fast"}}, "field optimizer.lr"),
        ({"training": {"iterations": 10, "epochs": 2}}, "exactly one of iterations or epochs"),
        ({"schedule": {"name": "step"}}, "needs step_size"),
        ({"bogus": 1}, "field bogus: Extra inputs are not permitted"),
        ({"model": {"backbone": "vgg16"}}, "field model.backbone"),
        ({"training": {"iterations": 0}}, "field training.iterations: Input should be greater than 0"),
        ({"training": {"iterations": 10, "eval_every": 0}}, "field training.eval_every"),
        ({"training": {"iterations": 10, "checkpoint_every": -1}}, "field training.checkpoint_every"),
        ({"optimizer": {"name": "sgd", "lr": -0.1}}, "field optimizer.lr: Input should be greater than 0"),
        ({"optimizer": {"name": "sgd", "lr": 0.1, "momentum": -0.9}}, "field optimizer.momentum"),
        ({"model": {"backbone": "googlenet", "embedding_dim": 0}}, "field model.embedding_dim"),
        ({"evaluation": {"kmeans_iterations": -5}}, "field evaluation.kmeans_iterations"),
        ({"data": {"dataset": "cub200", "validation": {"fraction": 1.0}}}, "field data.validation.fraction"),
        ({"data": {"dataset": "cub200", "validation": {"fraction": 0}}}, "field data.validation.fraction"),
        ({"data": {"dataset": "cub200", "validation": {"seed": 1}}}, "field data.validation.fraction: Field required"),
        ({"evaluation": {"selection": "best_val_r1"}}, "'best_val_r1' selects on the validation split; expected data"),
        ({"evaluation": {"selection": "best_loss"}}, "field evaluation.selection"),
    ],
)
def test_malformed_recipes_name_file_and_field(tmp_path, change, message):
    path = _write(tmp_path, {**BASE, **change})
    with pytest.raises(InputError) as error:
        load_recipe(path)
    assert str(path) in str(error.value) and message in str(error.value)


def test_missing_file_and_bad_yaml(tmp_path):
    with pytest.raises(InputError, match="recipe file not found"):
        load_recipe(tmp_path / "nope.yaml")
    bad = tmp_path / "bad.yaml"
    bad.write_text("id: [unclosed")
    with pytest.raises(InputError, match="not valid YAML"):
        load_recipe(bad)


def test_set_overrides_parse_values_as_yaml(tmp_path):
    recipe = load_recipe(
        _write(tmp_path, BASE), ["training.seed=3", "schedule.milestones=[10, 20]", "loss.params.margin=0.3"]
    )
    assert recipe.training.seed == 3
    assert recipe.schedule.milestones == [10, 20]
    assert recipe.loss.params["margin"] == 0.3
    with pytest.raises(InputError, match=r"expected key\.path=value"):
        parse_override("training.seed")
    with pytest.raises(InputError, match=r"field training\.sed"):
        load_recipe(_write(tmp_path, BASE), ["training.sed=1"])


def test_selection_on_the_validation_split_is_hashed_by_its_split_and_survives_smoke_and_mini(tmp_path):
    chosen = ["data.validation={fraction: 0.2, seed: 0}", "evaluation.selection=best_val_r1"]
    recipe = load_recipe(_write(tmp_path, BASE), chosen)
    assert (recipe.data.validation.fraction, recipe.data.validation.seed) == (0.2, 0)
    other_classes = load_recipe(_write(tmp_path, BASE), [*chosen, "data.validation.seed=1"])
    assert other_classes.content_hash() != recipe.content_hash()
    for shrunk in (smoke_version(recipe), mini_version(recipe)):
        assert shrunk.data.validation == recipe.data.validation and shrunk.evaluation.selection == "best_val_r1"


def test_content_hash_follows_the_computation_not_formatting_prose_or_targets(tmp_path):
    first = load_recipe(_write(tmp_path, BASE))
    (tmp_path / "other.yaml").write_text(yaml.safe_dump(BASE, default_flow_style=True))
    assert load_recipe(tmp_path / "other.yaml").content_hash() == first.content_hash()
    reworded = {**BASE, "description": "another wording", "assumptions": ["a sentence"], "id": "renamed"}
    reworded["targets"] = [{"table": "table9", "row": "elsewhere"}]
    reworded["smoke"] = {"iterations": 7}
    reworded["training"] = {**BASE["training"], "checkpoint_every": 7}
    assert load_recipe(_write(tmp_path, reworded)).content_hash() == first.content_hash()
    assert load_recipe(_write(tmp_path, reworded)).smoke_hash() != first.smoke_hash()
    assert load_recipe(_write(tmp_path, BASE), ["training.seed=1"]).content_hash() != first.content_hash()
    assert load_recipe(_write(tmp_path, BASE), ["optimizer.lr=2e-5"]).content_hash() != first.content_hash()


def test_smoke_version_shrinks_and_keeps_the_schedule_shape(tmp_path):
    smoke = smoke_version(load_recipe(_write(tmp_path, BASE)))
    assert smoke.data.dataset == "embedded"
    assert smoke.model.weights == "random"
    assert smoke.training.iterations == 60
    assert smoke.schedule.milestones == [15, 30]  # 1000/4000 and 2000/4000 of 60 iterations
    assert smoke.data.transforms.crop_size == 64


def test_fields_added_later_leave_the_hash_of_runs_that_do_not_use_them_as_it_was(tmp_path):
    recipe = load_recipe(_write(tmp_path, BASE))
    # the hash BASE had before model.width, model.measure_bn_batches and training.evaluate_at_start existed
    assert recipe.content_hash() == BASE_HASH
    for change in ("model.width=0.5", "model.measure_bn_batches=2", "training.evaluate_at_start=true"):
        assert load_recipe(_write(tmp_path, BASE), [change]).content_hash() != recipe.content_hash(), change
    validation = ["data.validation={fraction: 0.2, seed: 0}"]
    assert load_recipe(_write(tmp_path, BASE), validation).content_hash() != recipe.content_hash()
    reworded = {**BASE, "mini": {"iterations": 7, "trunk_lr_scale": 3.0}}
    assert load_recipe(_write(tmp_path, reworded)).content_hash() == recipe.content_hash()
    assert load_recipe(_write(tmp_path, reworded)).mini_hash() != recipe.mini_hash()


# Hashes 40ae3e4 (before data.pipeline "auto") gave BASE with random crops on each pipeline, and BASE (random resized
# crops) on the cache pipeline.
RANDOM_CROP_PIL_HASH = "02ab36b81230cc8e8ec95e48e7e56b178c5bf56e83c329587a4db9957a33f4eb"
RANDOM_CROP_CACHE_HASH_BEFORE_AUTO = "04c75d596310260a05249bf9568693ce7a2f0b897debe91084285a8ccbc8e0d8"
RESIZED_CROP_CACHE_HASH = "2a396dedcf66d1008bec8cfb709c7adaf6dd1a81189beddcade843733d5d454b"


def test_the_pipeline_is_hashed_by_the_batches_it_gives(tmp_path):
    pipelines = ("auto", "pil", "cache")
    random_crops = _write(tmp_path, {**BASE, "data": {**BASE["data"], "transforms": {"train_crop": "random_crop"}}})
    assert load_recipe(random_crops).data.pipeline == "auto"
    recipes = {pipeline: load_recipe(random_crops, [f"data.pipeline={pipeline}"]) for pipeline in pipelines}
    # the same batches on every pipeline: one computation, with the hash its PIL runs always had
    assert {recipe.content_hash() for recipe in recipes.values()} == {RANDOM_CROP_PIL_HASH}
    # a results file or checkpoint of an earlier cache run of it is this computation's
    for recipe in recipes.values():
        assert recipe.hashes_of_this_computation() == (RANDOM_CROP_PIL_HASH, RANDOM_CROP_CACHE_HASH_BEFORE_AUTO)
    # random resized crops (BASE): the cache cuts them from the resized image, the PIL path from the full-size one
    base = _write(tmp_path, BASE)
    resized_crops = {pipeline: load_recipe(base, [f"data.pipeline={pipeline}"]) for pipeline in pipelines}
    assert resized_crops["auto"].content_hash() == resized_crops["pil"].content_hash() == BASE_HASH
    assert resized_crops["cache"].content_hash() == RESIZED_CROP_CACHE_HASH
    assert resized_crops["pil"].hashes_of_this_computation() == (BASE_HASH,)
    assert resized_crops["cache"].hashes_of_this_computation() == (RESIZED_CROP_CACHE_HASH,)


def test_mini_version_shrinks_what_must_and_keeps_the_rest(tmp_path):
    tree = {
        **BASE,
        "model": {**BASE["model"], "frozen_bn": True},
        "optimizer": {**BASE["optimizer"], "new_layer_lr_multiplier": 10.0},
    }
    tree["mini"] = {"iterations": 400, "trunk_lr_scale": 20.0, "sampler_params": {"classes_per_batch": 4}}
    recipe = load_recipe(_write(tmp_path, tree))
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
    recipe = load_recipe(_write(tmp_path, {**BASE, "mini": {"iterations": 40}}))
    stated = load_recipe(_write(tmp_path, {**BASE, "mini": {"iterations": 40, "start": "random"}}))
    warm = load_recipe(_write(tmp_path, {**BASE, "mini": {"iterations": 40, "start": "glyph-pretrained"}}))
    assert stated.mini_hash() == recipe.mini_hash() != warm.mini_hash()
    mini = mini_version(warm)
    assert (mini.model.weights, mini.model.measure_bn_batches) == ("glyph-pretrained", 0)
    assert mini.content_hash() != mini_version(recipe).content_hash()
    with pytest.raises(InputError, match=r"mini\.start"):
        load_recipe(_write(tmp_path, {**BASE, "mini": {"start": "imagenet"}}))


def test_mini_epochs_scale_the_backbone_warm_up_and_an_epoch_schedule(tmp_path):
    tree = {**BASE, "model": {**BASE["model"], "freeze_backbone_epochs": 5}, "training": {"epochs": 20}}
    tree["schedule"] = {"name": "step", "unit": "epoch", "step_size": 10}
    tree["evaluation"] = {"metrics": ["recall"]}
    recipe = load_recipe(_write(tmp_path, {**tree, "mini": {"epochs": 8}}))
    mini = mini_version(recipe)
    assert (mini.training.epochs, mini.training.iterations, mini.training.eval_every) == (8, None, 8)
    assert mini.model.freeze_backbone_epochs == 2  # a quarter of the run, as 5 of 20
    assert (mini.schedule.unit, mini.schedule.step_size) == ("epoch", 4)
    assert mini.evaluation.metrics == ["recall", "nmi"]  # NMI added for the mini page
    with pytest.raises(InputError, match=r"field mini\.iterations: the backbone warm-up counts epochs"):
        mini_version(load_recipe(_write(tmp_path, tree)))
    counted_in_iterations = {**BASE, "mini": {"epochs": 8}}
    with pytest.raises(InputError, match=r"field mini\.epochs: the recipe counts iterations"):
        mini_version(load_recipe(_write(tmp_path, counted_in_iterations)))
    with pytest.raises(InputError, match=r"field mini: .*exactly one of iterations or epochs"):
        load_recipe(_write(tmp_path, {**tree, "mini": {"epochs": 8, "iterations": 10}}))
