"""Every pinned recipe under reproduce/<paper>/: valid, pointing at real published rows, and buildable.

Parametrised over the files, so a new recipe is checked the moment it is added.
"""

from pathlib import Path

import pytest
import torch

from dml_core.data import load_split
from dml_core.published import find_row, load_published
from dml_core.recipe import load_recipe, smoke_version
from dml_core.training.setup import build_run
from dml_core.training.step import train_step

REPRODUCE = Path(__file__).resolve().parents[2] / "reproduce"
RECIPES = sorted(REPRODUCE.glob("*/*.yaml"))


def _id(path: Path) -> str:
    return f"{path.parent.name}/{path.stem}"


@pytest.mark.parametrize("path", RECIPES, ids=_id)
def test_recipe_is_valid_and_targets_published_rows(path):
    recipe = load_recipe(path)
    assert recipe.id == path.stem, "a recipe's id is its file name"
    assert recipe.paper == path.parent.name, "a recipe lives in its paper's folder"
    assert recipe.targets, "a recipe names the published rows it reproduces"
    published = load_published(recipe.paper)
    for target in recipe.targets:
        find_row(published, target.table, target.row)  # raises with the table/row named when absent


@pytest.fixture(scope="module")
def embedded_root(tmp_path_factory):
    root = tmp_path_factory.mktemp("data")
    load_split("embedded", root, "train")  # generated once for the module
    return root


@pytest.mark.slow
@pytest.mark.parametrize("path", RECIPES, ids=_id)
def test_smoke_version_builds_and_takes_a_step(path, embedded_root):
    recipe = smoke_version(load_recipe(path))
    torch.manual_seed(0)
    parts = build_run(recipe, embedded_root, torch.device("cpu"))  # exactly what the trainer builds
    parts.model.train()
    images, positions = next(iter(parts.batches.epoch(0, 0)))
    labels = torch.as_tensor(parts.dense_labels)[positions]
    value = train_step(parts.model, parts.loss, parts.optimizer, parts.scheduler, images, labels, recipe.training)
    assert torch.isfinite(value)
