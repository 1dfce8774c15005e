"""``data.pipeline``: "auto" takes the cache on CUDA where its batches are the PIL path's, a current cache is there
and it leaves the GPU room; the PIL path elsewhere, saying why. The cache differs from the PIL path on random resized
crops, which is why "auto" and the content hash keep those apart."""

import pytest
import torch

from dml_core.data import ImageDataset, build_transform, load_split
from dml_core.data.registry import get_spec
from dml_core.input_spec import IMAGENET_RGB
from dml_core.pipeline.batch_augment import BatchAugmentation
from dml_core.pipeline.choice import GIB, choose_pipeline, wants_cache
from dml_core.pipeline.image_cache import build_cache, load_cache
from dml_core.pipeline.seeded_batches import SeededDataset
from dml_core.recipes.settings import DataSettings, TransformSettings

RANDOM_CROP = {"train_crop": "random_crop"}
RANDOM_RESIZED_CROP = {"train_crop": "random_resized_crop"}


def _data(pipeline: str = "auto", transforms=RANDOM_CROP) -> DataSettings:
    return DataSettings(dataset="cub200", pipeline=pipeline, transforms=transforms)


def test_the_default_is_auto_and_it_takes_the_cache_on_cuda_only_where_it_gives_the_pil_batches():
    assert DataSettings(dataset="cub200").pipeline == "auto"
    choice = choose_pipeline(_data(), "cuda", None, 2 * GIB, 80 * GIB)
    assert (choice.pipeline, choice.setting) == ("cache", "auto")
    assert choice.record() == {
        "pipeline": "cache",
        "pipeline_setting": "auto",
        "pipeline_reason": "auto on CUDA: the decoded uint8 cache (2.0 GiB)",
    }
    on_cpu = choose_pipeline(_data(), "cpu", None, 2 * GIB, None)
    assert on_cpu.pipeline == "pil" and on_cpu.reason.startswith("auto on cpu: the PIL path")
    resized_crops = choose_pipeline(_data(transforms=RANDOM_RESIZED_CROP), "cuda", None, 2 * GIB, 80 * GIB)
    assert resized_crops.pipeline == "pil" and "full-size image, which the cache does not hold" in resized_crops.reason


def test_auto_falls_back_to_the_pil_path_without_a_current_cache_or_room_on_the_gpu():
    missing = choose_pipeline(_data(), "cuda", "data/cub200/cache/train-squash256: no image cache", 0, 80 * GIB)
    assert missing.pipeline == "pil"
    assert missing.reason == "auto: no current cache: data/cub200/cache/train-squash256: no image cache"
    too_big = choose_pipeline(_data(), "cuda", None, 12 * GIB, 16 * GIB)
    assert too_big.pipeline == "pil"
    assert too_big.reason == "auto: the cache (12.0 GiB) would take over 50% of the GPU's 16.0 GiB"
    assert choose_pipeline(_data(), "cuda", None, 8 * GIB, 16 * GIB).pipeline == "cache"  # half: still room


@pytest.mark.parametrize("pipeline", ["pil", "cache"])
def test_an_explicit_setting_is_taken_on_every_device(pipeline):
    for device in ("cpu", "cuda"):
        for transforms in (RANDOM_CROP, RANDOM_RESIZED_CROP):
            choice = choose_pipeline(_data(pipeline, transforms), device, "missing", 0, None)
            assert (choice.pipeline, choice.setting, choice.reason) == (pipeline, pipeline, "set by the recipe")


def test_wants_cache_is_what_a_current_cache_would_be_taken_for():
    assert wants_cache(_data("cache", RANDOM_RESIZED_CROP), "cpu")
    assert wants_cache(_data(), "cuda")
    assert not wants_cache(_data(), "cpu")
    assert not wants_cache(_data(transforms=RANDOM_RESIZED_CROP), "cuda")
    assert not wants_cache(_data("pil"), "cuda")


def test_random_resized_crops_from_the_cache_are_not_the_pil_paths(odd_sized_cub):
    # The PIL path cuts them from the full-size decoded image; the cache holds the resized one. Random crops of the
    # resized image, which "auto" takes the cache for, are equal (tests/pipeline/test_batch_augment.py).
    cub = get_spec("cub200")
    config = TransformSettings(resize_mode="shorter_side", resize=40, crop_size=24, train_crop="random_resized_crop")
    build_cache(cub, odd_sized_cub, "train", "shorter_side", 40, progress=False)
    cached = BatchAugmentation(load_cache(cub, odd_sized_cub, "train", "shorter_side", 40), IMAGENET_RGB, config)
    split = load_split(cub, odd_sized_cub, "train")
    reference = SeededDataset(ImageDataset(split, build_transform(IMAGENET_RGB, config, train=True)))
    positions, seeds = [0, 1, 2, 3], [5, 6, 7, 8]
    expected = torch.stack([reference[(p, s)][0] for p, s in zip(positions, seeds, strict=True)])
    assert cached(positions, seeds).shape == expected.shape
    assert not torch.equal(cached(positions, seeds), expected)
    assert not DataSettings(dataset="cub200", transforms=RANDOM_RESIZED_CROP).cache_gives_pil_batches
    assert DataSettings(dataset="cub200", transforms=RANDOM_CROP).cache_gives_pil_batches
