"""The ``pipelines`` part: the decoded-cache pipeline's training batches on the GPU are the PIL path's, bit for bit.

Why: ``data.pipeline: auto`` trains from the cache on CUDA, and the content hash counts the two pipelines as one
computation where their batches are the same (``DataSettings.cache_gives_pil_batches``), so a run finished on either
is finished for both. The CPU tests check it; on the GPU the crops, flips and normalisation run in CUDA kernels, and
every step is exact or one correctly rounded fp32 operation an element, so any difference is a bug, never rounding.
"""

from __future__ import annotations

from pathlib import Path

import torch

from dml_core.data import ImageDataset, build_transform, load_split
from dml_core.data.prepare import ensure_generated
from dml_core.data.registry import get_spec
from dml_core.data.sources.embedded import DATASET
from dml_core.data.transforms import ToModelInput, build_pixel_transform
from dml_core.gpu_check.part import CheckContext, Outcome, PartFailed
from dml_core.input_spec import CAFFE_BGR, IMAGENET_RGB, InputSpec
from dml_core.pipeline.batch_augment import BatchAugmentation
from dml_core.pipeline.image_cache import ensure_generated_cache, load_cache
from dml_core.pipeline.seeded_batches import SeededDataset
from dml_core.recipes.settings import TransformSettings

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


def _differences(batch: torch.Tensor, expected: torch.Tensor) -> dict:
    return {
        "differing_values": int((batch != expected).sum()),
        "max_abs_difference": float((batch - expected).abs().max()),
    }


def compare_pipelines(data_root: Path, device: torch.device) -> dict[str, dict]:
    """Per configuration: the keys compared, how many values of the device's cached batch differ from the PIL
    path's image-by-image reference (decoded, resized, cropped, flipped and normalised in this process, as a
    DataLoader worker does), and the largest difference; the same for the PIL path's own batch (uint8 crops
    converted on the device, ``pil_on_device``)."""
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
        keys = list(zip(positions, seeds, strict=True))
        reference = SeededDataset(ImageDataset(split, build_transform(spec, config, train=True)))
        expected = torch.stack([reference[key][0] for key in keys])
        crops = SeededDataset(ImageDataset(split, build_pixel_transform(spec, config, train=True)))
        uint8_batch = torch.stack([crops[key][0] for key in keys]).to(device)
        pil_on_device = ToModelInput(spec).to(device)(uint8_batch).cpu()
        figures[name] = {
            "keys": len(positions),
            "shape": list(on_device.shape),
            **_differences(on_device, expected),
            "pil_on_device": _differences(pil_on_device, expected),
        }
    return figures


def run_pipelines(context: CheckContext) -> Outcome:
    figures = compare_pipelines(context.data_root, context.device)
    differing = [
        f"{pipeline} {name}: {record['differing_values']} values, up to {record['max_abs_difference']:.3g}"
        for name, figure in figures.items()
        for pipeline, record in (("cache", figure), ("pil", figure["pil_on_device"]))
        if record["differing_values"]
    ]
    if differing:
        raise PartFailed(
            f"batches on the GPU differ from the PIL path's image by image: {'; '.join(differing)}", figures
        )
    keys = sum(record["keys"] for record in figures.values())
    return Outcome(
        f"{keys} cached crops and {keys} PIL crops converted on the GPU equal the PIL path's image-by-image ones bit "
        f"for bit ({len(figures)} settings)",
        figures,
    )
