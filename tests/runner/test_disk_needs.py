"""The disk figures of the plan: a checkpoint estimated from the model built on the meta device against a real
checkpoint the trainer wrote, the cache's bound without the images against its exact size from them, and the
per-dataset table against the registry."""

import pytest

from dml_core.data.registry import DATASETS, get_spec
from dml_core.pipeline.image_cache import estimated_cache_bytes
from dml_core.recipes import load_recipe
from dml_core.runner.disk_needs import (
    DATASET_BYTES,
    cache_lower_bound,
    checkpoint_bytes,
    optimiser_slots,
    results_bytes,
    training_images,
)
from dml_core.training import train
from dml_core.training.run_description import PlannedRun, RunToTrain
from tests.training.tiny_runs import recipe_file, tiny_run


@pytest.mark.parametrize(
    ("optimizer", "slots"), [({"name": "sgd", "lr": 0.1, "momentum": 0.9}, 1), ({"name": "adam", "lr": 1e-3}, 2)]
)
def test_a_checkpoint_is_about_the_model_and_optimiser_state_the_plan_estimates(
    tmp_path, odd_sized_cub, optimizer, slots
):
    # GoogLeNet at full width (6.1 M parameters), as the papers' runs hold it, one step on the fixture CUB
    data = {"dataset": "cub200", "transforms": {"resize_mode": "squash", "resize": 40, "crop_size": 32}}
    sampler = {"name": "pk", "params": {"classes_per_batch": 2, "images_per_class": 2}}
    tree = tiny_run(data=data, sampler=sampler, model={"backbone": "googlenet", "width": 1.0}, optimizer=optimizer)
    recipe = load_recipe(recipe_file(tmp_path, tree))
    assert optimiser_slots(recipe) == slots
    train(RunToTrain(PlannedRun(recipe, tmp_path / "run"), data_root=odd_sized_cub, device="cpu", progress=False))
    written = (tmp_path / "run" / "checkpoint.pt").stat().st_size
    estimate = checkpoint_bytes(recipe)
    assert abs(written - estimate) < 0.02 * written, (written, estimate)  # RNG states, records: under 2%
    without_momentum = recipe.model_copy(update={"optimizer": recipe.optimizer.model_copy(update={"momentum": 0.0})})
    assert optimiser_slots(without_momentum) == (0 if optimizer["name"] == "sgd" else 2)


def test_the_cache_bound_without_the_images_is_exact_when_squashed_and_below_otherwise(odd_sized_cub):
    cub = get_spec("cub200")
    images = training_images(cub)
    assert images == 6  # the fixture's training split
    assert estimated_cache_bytes(cub, odd_sized_cub, "train", "squash", 40) == (6, cache_lower_bound(6, "squash", 40))
    _, exact = estimated_cache_bytes(cub, odd_sized_cub, "train", "shorter_side", 40)
    assert cache_lower_bound(6, "shorter_side", 40) < exact  # the fixture's images are not square


def test_every_dataset_figure_is_a_downloaded_dataset_s():
    assert set(DATASET_BYTES) <= set(DATASETS) and not any(DATASETS[name].generated for name in DATASET_BYTES)
    for figures in DATASET_BYTES.values():
        assert figures.archives > 10**9 and figures.extracted >= figures.archives * 0.9
    assert 0.6e6 < results_bytes(get_spec("sop")) < 1e6  # 3 evaluations x 60,502 queries, about 0.2 MB each
