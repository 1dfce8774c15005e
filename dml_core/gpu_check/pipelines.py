"""The ``pipelines`` part: the decoded-cache pipeline's training batches on the GPU are the PIL path's, bit for bit.

Why: ``data.pipeline: auto`` trains from the cache on CUDA, and the content hash counts the two pipelines as one
computation where their batches are the same (random crops of the resized image:
``DataSettings.cache_gives_pil_batches``), so a run finished on either is finished for both. On the CPU that is
tested (tests/data/test_batch_augment.py); on the GPU the crops, flips and normalisation run in CUDA kernels, so
this part compares them there: the embedded glyph set's cache, augmented on the device for 64 (position, seed)
keys, against the PIL path (decoding, resizing, cropping, flipping and normalising in this process, as a DataLoader
worker does) for the same keys. Every step is exact (uint8 gathers and flips) or one correctly rounded fp32
operation per element (the scale, the mean subtraction, the division by the std), which CUDA computes as the CPU
does: any difference is a bug, never rounding. Both input conventions (torchvision RGB, Caffe BGR x 255) and both
resize modes are covered.
"""

from __future__ import annotations

from pathlib import Path

import torch

from dml_core.data import ImageDataset, build_transform, load_split
from dml_core.data.batch_augment import BatchAugmentation
from dml_core.data.image_cache import ensure_generated_cache, load_cache
from dml_core.data.prepare import ensure_generated
from dml_core.data.registry import get_spec
from dml_core.data.sources.embedded import DATASET
from dml_core.gpu_check.part import CheckContext, Outcome, PartFailed
from dml_core.input_spec import CAFFE_BGR, IMAGENET_RGB, InputSpec
from dml_core.recipes.settings import TransformSettings
from dml_core.training.seeded_batches import SeededDataset

KEYS = 64  # (position, seed) pairs per configuration: the first images, seeds 1000 + position
# Random crops of the resized image: the cache path gives the PIL path's batches there (random resized crops differ).
CONFIGURATIONS: dict[str, tuple[TransformSettings, InputSpec]] = {
    "shorter_side 40, crop 32, flips, Caffe BGR": (
        TransformSettings(resize_mode="shorter_side", resize=40, train_crop="random_crop", crop_size=32),
        CAFFE_BGR,
    ),
    "squash 40, crop 24, flips, torchvision RGB": (
        TransformSettings(resize_mode="squash", resize=40, train_crop="random_crop", crop_size=24),
        IMAGENET_RGB,
    ),
}


def compare_pipelines(data_root: Path, device: torch.device) -> dict[str, dict]:
    """Per configuration: the keys compared, how many values of the device's cached batch differ from the PIL
    path's, and the largest difference."""
    glyphs = get_spec(DATASET)
    ensure_generated(glyphs, data_root)
    split = load_split(glyphs, data_root, "train")
    positions = list(range(min(KEYS, len(split))))
    seeds = [1000 + position for position in positions]
    figures = {}
    for name, (config, spec) in CONFIGURATIONS.items():
        ensure_generated_cache(glyphs, data_root, "train", config.resize_mode, config.resize)
        cache = load_cache(glyphs, data_root, "train", config.resize_mode, config.resize)
        on_device = BatchAugmentation(cache.to(device), spec, config)(positions, seeds).cpu()
        reference = SeededDataset(ImageDataset(split, build_transform(spec, config, train=True)))
        expected = torch.stack(
            [reference[(position, seed)][0] for position, seed in zip(positions, seeds, strict=True)]
        )
        figures[name] = {
            "keys": len(positions),
            "shape": list(on_device.shape),
            "differing_values": int((on_device != expected).sum()),
            "max_abs_difference": float((on_device - expected).abs().max()),
        }
    return figures


def run_pipelines(context: CheckContext) -> Outcome:
    figures = compare_pipelines(context.data_root, context.device)
    differing = {name: record for name, record in figures.items() if record["differing_values"]}
    if differing:
        shown = "; ".join(
            f"{name}: {record['differing_values']} values, up to {record['max_abs_difference']:.3g}"
            for name, record in differing.items()
        )
        raise PartFailed(f"the cache pipeline's batches on the GPU differ from the PIL path's: {shown}", figures)
    keys = sum(record["keys"] for record in figures.values())
    return Outcome(
        f"{keys} cached crops on the GPU equal the PIL path's bit for bit ({len(figures)} settings)", figures
    )
