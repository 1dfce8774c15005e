"""The typed recipe: validation errors name the file and field; ranges; overrides."""

import pytest

from dml_core.errors import InputError
from dml_core.recipes import load_recipe, mini_version, smoke_version
from dml_core.recipes.compose import parse_override
from tests.recipes.recipe_tree import BASE, write_recipe


def test_loads_and_fills_defaults(tmp_path):
    recipe = load_recipe(write_recipe(tmp_path, BASE))
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
        ({"training": {"iterations": 10, "precision": "fp16"}}, "field training.precision"),
        ({"training": {"iterations": 10, "precision": "fp32", "bf16": True}}, "expected precision only, found both"),
    ],
)
def test_malformed_recipes_name_file_and_field(tmp_path, change, message):
    path = write_recipe(tmp_path, {**BASE, **change})
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
        write_recipe(tmp_path, BASE), ["training.seed=3", "schedule.milestones=[10, 20]", "loss.params.margin=0.3"]
    )
    assert recipe.training.seed == 3
    assert recipe.schedule.milestones == [10, 20]
    assert recipe.loss.params["margin"] == 0.3
    with pytest.raises(InputError, match=r"expected key\.path=value"):
        parse_override("training.seed")
    with pytest.raises(InputError, match=r"field training\.sed"):
        load_recipe(write_recipe(tmp_path, BASE), ["training.sed=1"])


def test_selection_on_the_validation_split_is_hashed_by_its_split_and_survives_smoke_and_mini(tmp_path):
    chosen = ["data.validation={fraction: 0.2, seed: 0}", "evaluation.selection=best_val_r1"]
    recipe = load_recipe(write_recipe(tmp_path, BASE), chosen)
    assert (recipe.data.validation.fraction, recipe.data.validation.seed) == (0.2, 0)
    other_classes = load_recipe(write_recipe(tmp_path, BASE), [*chosen, "data.validation.seed=1"])
    assert other_classes.content_hash() != recipe.content_hash()
    for shrunk in (smoke_version(recipe), mini_version(recipe)):
        assert shrunk.data.validation == recipe.data.validation and shrunk.evaluation.selection == "best_val_r1"
