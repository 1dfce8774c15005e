"""The run's batch source: "auto" resolved against the cache on disk and the GPU's memory (the CUDA half of the rule
runs on the CPU: only the device type and size are passed in), the pipeline recorded in the results file, and results
files and checkpoints of earlier cache runs recognised as the same computation."""

import pytest
import torch

from dml_core.data import ImageDataset, build_transform
from dml_core.data.registry import DATASETS, get_spec
from dml_core.errors import InputError
from dml_core.pipeline.batch_source import CachedBatches, LoaderBatches, build_batch_source, pipeline_for_run
from dml_core.pipeline.choice import GIB
from dml_core.pipeline.image_cache import build_cache
from dml_core.pipeline.seeded_batches import EpochSlice, SeededDataset
from dml_core.recipes import load_recipe
from dml_core.results import load_results
from dml_core.training import builders, train
from dml_core.training.checkpoint import load_checkpoint, save_checkpoint
from dml_core.training.run_description import PlannedRun, RunToTrain
from dml_core.training.setup import build_run
from dml_core.training.trainer import is_finished_run
from tests.training.tiny_runs import recipe_file, tiny_run

# What 40ae3e4 hashed the tiny run as on the cache pipeline (the same batches as its PIL runs, hashed apart then), when
# training.bf16, the flag training.precision replaced, was true unless set (a CPU run is fp32 whatever it says).
BF16_AS_THEN = {"precision": "bf16"}
TINY_CACHE_HASH_BEFORE_AUTO = "72e1cdca48c214e1a15a839fe8184262cc42dd93336d314b093c6edd3e7914ee"


def _cub_recipe(tmp_path, root, **data):
    """The tiny run on the prepared fixture CUB (two training classes of three images), random 32 px crops of the
    images squashed to 40 px."""
    settings = {"dataset": "cub200", "root": str(root), "transforms": {"resize_mode": "squash", "resize": 40,
                "crop_size": 32, "train_crop": "random_crop"}, **data}  # fmt: skip
    sampler = {"name": "pk", "params": {"classes_per_batch": 2, "images_per_class": 2}}
    return load_recipe(recipe_file(tmp_path, tiny_run(data=settings, sampler=sampler)))


def test_auto_on_cuda_takes_a_current_cache_that_leaves_the_gpu_room(tmp_path, odd_sized_cub):
    cub = get_spec("cub200")
    recipe = _cub_recipe(tmp_path, odd_sized_cub)
    choice, cache = pipeline_for_run(recipe, cub, odd_sized_cub, "cuda", 80 * GIB)
    assert (choice.pipeline, cache) == ("pil", None)
    command = f"run `nox -s dml -- prepare cub200 --root {odd_sized_cub} --cache squash --cache-size 40`"
    assert choice.reason.startswith("auto: no current cache: ") and choice.reason.endswith(command)
    build_cache(cub, odd_sized_cub, "train", "squash", 40, progress=False)
    choice, cache = pipeline_for_run(recipe, cub, odd_sized_cub, "cuda", 80 * GIB)
    assert choice.pipeline == "cache" and len(cache) == 6 and len(cache.pixels) == 6 * 3 * 40 * 40
    choice, cache = pipeline_for_run(recipe, cub, odd_sized_cub, "cuda", 2 * len(cache.pixels) - 1)
    assert (choice.pipeline, cache) == ("pil", None) and "would take over 50% of the GPU's" in choice.reason
    choice, cache = pipeline_for_run(recipe, cub, odd_sized_cub, "cpu", None)
    assert (choice.pipeline, cache) == ("pil", None)


def test_the_batch_source_is_the_chosen_pipeline_and_says_which(tmp_path, odd_sized_cub):
    cpu, cub = torch.device("cpu"), get_spec("cub200")  # after the fixture shrank its counts

    def source(**data):
        recipe = _cub_recipe(tmp_path, odd_sized_cub, **data)
        model = builders.build_model(recipe)
        train_set, labels, _, _ = builders.build_datasets(recipe, cub, model, odd_sized_cub)
        return build_batch_source(
            recipe, cub, model, train_set, builders.build_sampler(recipe, labels), odd_sized_cub, cpu
        )

    auto = source()
    assert isinstance(auto, LoaderBatches) and auto.pipeline.record()["pipeline_setting"] == "auto"
    with pytest.raises(InputError, match=r"no image cache for cub200/train .* --cache squash --cache-size 40`"):
        source(pipeline="cache")  # set by the recipe and missing: refused, saying what to run
    build_cache(get_spec("cub200"), odd_sized_cub, "train", "squash", 40, progress=False)
    cached = source(pipeline="cache")
    assert isinstance(cached, CachedBatches) and cached.pipeline.record() == {
        "pipeline": "cache", "pipeline_setting": "cache", "pipeline_reason": "set by the recipe",
    }  # fmt: skip
    images, _ = next(iter(cached.epoch(0, 0)))
    assert images.shape == (4, 3, 32, 32)
    assert isinstance(source(), LoaderBatches)  # auto on the CPU: the PIL path, cache or not


def test_cache_batches_drawn_in_a_worker_are_those_drawn_here_and_those_of_the_augmentation_itself(
    tmp_path, odd_sized_cub
):
    """The crop boxes and flips of each batch come from a DataLoader worker where the run has workers (the training
    process then only receives them); the batches are the same, epoch by epoch and from a resumed batch on."""
    cub = get_spec("cub200")
    build_cache(cub, odd_sized_cub, "train", "squash", 40, progress=False)
    recipe = _cub_recipe(tmp_path, odd_sized_cub, pipeline="cache")
    model = builders.build_model(recipe)
    _, labels, _, _ = builders.build_datasets(recipe, cub, model, odd_sized_cub)
    cpu = torch.device("cpu")

    def batches(workers: int) -> list:
        recipe_with = recipe.model_copy(update={"data": recipe.data.model_copy(update={"num_workers": workers})})
        source = build_batch_source(
            recipe_with, cub, model, None, builders.build_sampler(recipe_with, labels), odd_sized_cub, cpu
        )
        assert source.num_workers == workers
        try:
            return [(epoch, images, positions) for epoch, start in ((0, 0), (1, 1)) for images, positions in
                    source.epoch(epoch, start)]  # fmt: skip
        finally:
            source.close()

    here, in_worker = batches(0), batches(1)
    assert len(here) == len(in_worker) > 2
    sampler = builders.build_sampler(recipe, labels)
    augmentation = build_batch_source(recipe, cub, model, None, sampler, odd_sized_cub, cpu).augmentation
    keys = [key for epoch, start in ((0, 0), (1, 1)) for key in EpochSlice(sampler, epoch, start, recipe.training.seed)]
    for (_, images, positions), (_, other, other_positions), batch_keys in zip(here, in_worker, keys, strict=True):
        assert torch.equal(images, other) and torch.equal(positions, other_positions)
        own = augmentation([position for position, _ in batch_keys], [seed for _, seed in batch_keys])
        assert torch.equal(images, own) and positions.tolist() == [position for position, _ in batch_keys]


def test_a_run_looks_its_dataset_up_once_and_every_data_step_takes_the_spec(monkeypatch, tmp_path, odd_sized_cub):
    """``build_run`` looks the recipe's dataset up, and the data steps (its splits, its cache) take the spec it
    found, not the name (issue 36: the name was looked up again at every step)."""
    recipe = _cub_recipe(tmp_path, odd_sized_cub, pipeline="cache")
    build_cache(get_spec("cub200"), odd_sized_cub, "train", "squash", 40, progress=False)
    looked_up, lookup = [], DATASETS.lookup

    def counted_lookup(name, *args, **kwargs):
        looked_up.append(name)
        return lookup(name, *args, **kwargs)

    monkeypatch.setattr(DATASETS, "lookup", counted_lookup)
    parts = build_run(recipe, odd_sized_cub, torch.device("cpu"))
    assert looked_up == ["cub200"]
    assert isinstance(parts.batches, CachedBatches) and len(parts.batches.augmentation.cache) == len(parts.train_set)
    assert len(parts.test_set.labels) == 6  # the test split too


@pytest.mark.slow
@pytest.mark.usefixtures("glyph_data_root")
def test_a_cpu_run_on_auto_trains_as_on_pil_records_it_and_counts_earlier_cache_runs_as_finished(tmp_path):
    data_root = tmp_path / "data"
    runs = {}
    for pipeline in ("auto", "pil"):
        recipe = load_recipe(recipe_file(tmp_path, tiny_run(data={"pipeline": pipeline}, training=BF16_AS_THEN)))
        runs[pipeline] = load_results(
            train(RunToTrain(PlannedRun(recipe, tmp_path / pipeline), data_root=data_root, progress=False))
        )
    assert [e.metrics for e in runs["auto"].evaluations] == [e.metrics for e in runs["pil"].evaluations]
    assert runs["auto"].recipe.sha256 == runs["pil"].recipe.sha256
    assert runs["auto"].environment["data_loading"] | {"pipeline_reason": ""} == {
        "num_workers": 0, "num_workers_setting": 0, "worker_start_method": None,
        "pipeline": "pil", "pipeline_setting": "auto", "pipeline_reason": "",
    }  # fmt: skip
    assert runs["auto"].environment["data_loading"]["pipeline_reason"].startswith("auto on cpu: the PIL path")

    # An earlier version hashed a cache run of the same batches apart: its results file finishes this run, and
    # its checkpoint continues it (a hash of another recipe still does neither).
    recipe = load_recipe(recipe_file(tmp_path, tiny_run(data={"pipeline": "cache"}, training=BF16_AS_THEN)))
    results_path = tmp_path / "pil" / "results.json"
    written = results_path.read_text()
    for recorded, finished in ((TINY_CACHE_HASH_BEFORE_AUTO, True), ("0" * 64, False)):
        results_path.write_text(written.replace(runs["pil"].recipe.sha256, recorded))
        assert is_finished_run(results_path, recipe) is finished
    checkpoint_path = tmp_path / "pil" / "checkpoint.pt"
    state = load_checkpoint(checkpoint_path)
    save_checkpoint(checkpoint_path, {**state, "recipe_sha256": TINY_CACHE_HASH_BEFORE_AUTO})
    train(
        RunToTrain(PlannedRun(recipe, tmp_path / "pil"), resume=True, rerun=True, data_root=data_root, progress=False)
    )
    save_checkpoint(checkpoint_path, {**state, "recipe_sha256": "0" * 64})
    with pytest.raises(InputError, match=r"checkpoint\.pt: written by recipe tiny with hash 000000000000"):
        train(
            RunToTrain(
                PlannedRun(recipe, tmp_path / "pil"), resume=True, rerun=True, data_root=data_root, progress=False
            )
        )


def test_pil_batches_cross_from_the_workers_as_uint8_and_reach_the_model_as_the_per_image_transform_gives(
    tmp_path, odd_sized_cub
):
    cub, cpu = get_spec("cub200"), torch.device("cpu")
    recipe = _cub_recipe(tmp_path, odd_sized_cub, num_workers=1)  # one worker: the batches cross a process boundary
    model = builders.build_model(recipe)
    train_set, labels, test_set, _ = builders.build_datasets(recipe, cub, model, odd_sized_cub)
    assert train_set[0][0].dtype == test_set.dataset[0][0].dtype == torch.uint8  # what the workers give
    sampler = builders.build_sampler(recipe, labels)
    source = build_batch_source(recipe, cub, model, train_set, sampler, odd_sized_cub, cpu)
    try:
        batches = list(source.epoch(0, 0))
    finally:
        source.close()
    per_image = build_transform(model.input_spec, recipe.data.transforms, train=True)
    reference = SeededDataset(ImageDataset(train_set.split_index, per_image))
    keys = list(EpochSlice(sampler, 0, 0, recipe.training.seed))
    assert len(batches) == len(keys) > 1
    for (images, positions), batch_keys in zip(batches, keys, strict=True):
        expected = torch.stack([reference[key][0] for key in batch_keys])
        assert images.dtype == torch.float32 and torch.equal(images, expected)
        assert positions.tolist() == [position for position, _ in batch_keys]
