"""The content hash follows the computation only, and keeps every earlier run's hash."""

import yaml

from dml_core.recipes import load_recipe
from tests.recipes.recipe_tree import BASE, BASE_HASH, write_recipe


def test_content_hash_follows_the_computation_not_formatting_prose_or_targets(tmp_path):
    first = load_recipe(write_recipe(tmp_path, BASE))
    (tmp_path / "other.yaml").write_text(yaml.safe_dump(BASE, default_flow_style=True))
    assert load_recipe(tmp_path / "other.yaml").content_hash() == first.content_hash()
    reworded = {**BASE, "description": "another wording", "assumptions": ["a sentence"], "id": "renamed"}
    reworded["targets"] = [{"table": "table9", "row": "elsewhere"}]
    reworded["smoke"] = {"iterations": 7}
    reworded["training"] = {**BASE["training"], "checkpoint_every": 7}
    assert load_recipe(write_recipe(tmp_path, reworded)).content_hash() == first.content_hash()
    assert load_recipe(write_recipe(tmp_path, reworded)).smoke_hash() != first.smoke_hash()
    assert load_recipe(write_recipe(tmp_path, BASE), ["training.seed=1"]).content_hash() != first.content_hash()
    assert load_recipe(write_recipe(tmp_path, BASE), ["optimizer.lr=2e-5"]).content_hash() != first.content_hash()


def test_fields_added_later_leave_the_hash_of_runs_that_do_not_use_them_as_it_was(tmp_path):
    recipe = load_recipe(write_recipe(tmp_path, BASE))
    # the hash BASE had before model.width, model.measure_bn_batches and training.evaluate_at_start existed
    assert recipe.content_hash() == BASE_HASH
    for change in ("model.width=0.5", "model.measure_bn_batches=2", "training.evaluate_at_start=true"):
        assert load_recipe(write_recipe(tmp_path, BASE), [change]).content_hash() != recipe.content_hash(), change
    validation = ["data.validation={fraction: 0.2, seed: 0}"]
    assert load_recipe(write_recipe(tmp_path, BASE), validation).content_hash() != recipe.content_hash()
    reworded = {**BASE, "mini": {"iterations": 7, "trunk_lr_scale": 3.0}}
    assert load_recipe(write_recipe(tmp_path, reworded)).content_hash() == recipe.content_hash()
    assert load_recipe(write_recipe(tmp_path, reworded)).mini_hash() != recipe.mini_hash()


def test_the_precision_is_read_and_hashed_as_the_flag_it_replaced(tmp_path):
    recipe = load_recipe(write_recipe(tmp_path, BASE))  # BASE's precision: bf16
    training = {key: value for key, value in BASE["training"].items() if key != "precision"}
    flagged = load_recipe(write_recipe(tmp_path, {**BASE, "training": {**training, "bf16": True}}))
    assert flagged.training.precision == "bf16" and flagged.content_hash() == recipe.content_hash() == BASE_HASH
    fp32 = load_recipe(write_recipe(tmp_path, BASE), ["training.precision=fp32"])
    assert fp32.computation()["training"]["bf16"] is False and "precision" not in fp32.computation()["training"]
    assert fp32.content_hash() != recipe.content_hash()


# Hashes 40ae3e4 (before data.pipeline "auto") gave BASE with random crops on each pipeline, and BASE (random resized
# crops) on the cache pipeline.
RANDOM_CROP_PIL_HASH = "02ab36b81230cc8e8ec95e48e7e56b178c5bf56e83c329587a4db9957a33f4eb"
RANDOM_CROP_CACHE_HASH_BEFORE_AUTO = "04c75d596310260a05249bf9568693ce7a2f0b897debe91084285a8ccbc8e0d8"
RESIZED_CROP_CACHE_HASH = "2a396dedcf66d1008bec8cfb709c7adaf6dd1a81189beddcade843733d5d454b"


def test_the_pipeline_is_hashed_by_the_batches_it_gives(tmp_path):
    pipelines = ("auto", "pil", "cache")
    random_crops = write_recipe(
        tmp_path, {**BASE, "data": {**BASE["data"], "transforms": {"train_crop": "random_crop"}}}
    )
    assert load_recipe(random_crops).data.pipeline == "auto"
    recipes = {pipeline: load_recipe(random_crops, [f"data.pipeline={pipeline}"]) for pipeline in pipelines}
    # the same batches on every pipeline: one computation, with the hash its PIL runs always had
    assert {recipe.content_hash() for recipe in recipes.values()} == {RANDOM_CROP_PIL_HASH}
    # a results file or checkpoint of an earlier cache run of it is this computation's
    for recipe in recipes.values():
        assert recipe.hashes_of_this_computation() == (RANDOM_CROP_PIL_HASH, RANDOM_CROP_CACHE_HASH_BEFORE_AUTO)
    # random resized crops (BASE): the cache cuts them from the resized image, the PIL path from the full-size one
    base = write_recipe(tmp_path, BASE)
    resized_crops = {pipeline: load_recipe(base, [f"data.pipeline={pipeline}"]) for pipeline in pipelines}
    assert resized_crops["auto"].content_hash() == resized_crops["pil"].content_hash() == BASE_HASH
    assert resized_crops["cache"].content_hash() == RESIZED_CROP_CACHE_HASH
    assert resized_crops["pil"].hashes_of_this_computation() == (BASE_HASH,)
    assert resized_crops["cache"].hashes_of_this_computation() == (RESIZED_CROP_CACHE_HASH,)
