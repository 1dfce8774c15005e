"""Batch augmentation on cached images equals the PIL path for the same (position, seed) keys."""

import numpy as np
import pytest
import torch

from dml_core.data import ImageDataset, build_transform, load_split
from dml_core.data.registry import get_spec
from dml_core.input_spec import CAFFE_BGR, IMAGENET_RGB
from dml_core.pipeline.batch_augment import BatchAugmentation
from dml_core.pipeline.image_cache import build_cache, load_cache
from dml_core.pipeline.seeded_batches import SeededDataset
from dml_core.recipes.settings import TransformSettings


@pytest.mark.parametrize(
    ("config", "spec"),
    [
        (TransformSettings(resize_mode="shorter_side", resize=40, train_crop="random_crop", crop_size=32), CAFFE_BGR),
        (
            TransformSettings(resize_mode="squash", resize=40, train_crop="random_crop", crop_size=24, hflip=False),
            IMAGENET_RGB,
        ),
    ],
)
def test_identical_tensors_for_the_same_keys(odd_sized_cub, config, spec):
    cub = get_spec("cub200")
    build_cache(cub, odd_sized_cub, "train", config.resize_mode, config.resize, progress=False)
    cache = load_cache(cub, odd_sized_cub, "train", config.resize_mode, config.resize)
    reference = SeededDataset(
        ImageDataset(load_split(cub, odd_sized_cub, "train"), build_transform(spec, config, train=True))
    )
    augment = BatchAugmentation(cache, spec, config)
    positions = [0, 3, 5, 1, 3]
    for seeds in ([1, 2, 3, 4, 5], [90, 91, 92, 93, 94]):
        batch = augment(positions, seeds)
        expected = torch.stack([reference[(p, s)][0] for p, s in zip(positions, seeds, strict=True)])
        assert torch.equal(batch, expected)


def test_random_resized_crops_draw_torchvisions_boxes_and_resize_like_it(odd_sized_cub):
    # RandomResizedCrop on a cached image: the same boxes (torchvision's sampler, same seeds) and kernels as the
    # PIL path would use on an image of that size.
    cub = get_spec("cub200")
    config = TransformSettings(resize_mode="squash", resize=40, crop_size=24, train_crop="random_resized_crop")
    build_cache(cub, odd_sized_cub, "train", "squash", 40, progress=False)
    augment = BatchAugmentation(load_cache(cub, odd_sized_cub, "train", "squash", 40), IMAGENET_RGB, config)
    boxes, _ = augment.draw([40] * 2000, [40] * 2000, list(range(2000)))
    areas = np.array([box["height"] * box["width"] / 1600 for box in boxes])
    assert areas.min() >= 0.16 - 0.05 and areas.max() <= 1.0
    assert 0.5 < areas.mean() < 0.65  # uniform scale in [0.16, 1] with torchvision's rounding and retries
    assert augment([0, 1], [7, 8]).shape == (2, 3, 24, 24)


def test_crop_positions_cover_the_image_uniformly(odd_sized_cub):
    cub = get_spec("cub200")
    config = TransformSettings(resize_mode="squash", resize=40, train_crop="random_crop", crop_size=32)
    build_cache(cub, odd_sized_cub, "train", "squash", 40, progress=False)
    augment = BatchAugmentation(load_cache(cub, odd_sized_cub, "train", "squash", 40), IMAGENET_RGB, config)
    boxes, flips = augment.draw([40] * 4500, [40] * 4500, list(range(4500)))
    tops = np.bincount([box["top"] for box in boxes], minlength=9)
    assert len(tops) == 9 and tops.min() > 400  # 9 positions, ~500 each
    assert 0.45 < np.mean(flips) < 0.55
