"""Typed recipes: validation errors name the file and field; ranges; overrides; smoke shrinking; the content hash
of the computation only."""

import pytest
import yaml

from dml_core.errors import InputError
from dml_core.recipe import parse_override
from dml_core.recipes import load_recipe, smoke_version

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
    "training": {"iterations": 4000, "eval_every": 500},
}


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
