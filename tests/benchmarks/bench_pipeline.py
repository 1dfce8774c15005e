"""A DataLoader worker's cost per image on the PIL path, per paper's main recipe, next to bare JPEG decoding measured in
the same run: what sizes the workers a GPU needs (the PIL path fed the first H100 at 0.21-0.62 of the model-only speed;
it is the default on CUDA for anml and cgml's random-resized-crop runs, and wherever a cache is missing).

Images: photo-like JPEGs (gradients and noise, quality 90) at CUB-like sizes (500 x 375, 375 x 500, 640 x 427); the
datasets cannot be downloaded onto the measuring machines. Each figure on one CPU thread (a worker's), the variants in
alternating rounds, the median round per image:
- ``decode``: ``load_image`` alone, the reference;
- ``worker``: ``load_image`` then ``build_pixel_transform(train=True)``: uint8 crops, what a worker hands over;
- ``float_in_worker``: ``load_image`` then ``build_transform(train=True)``: what a worker computed before the float
  conversion and normalisation moved to the training device;
- ``to_model_input``: ``ToModelInput`` of a batch of ``BATCH`` crops on this CPU, per image: what the training
  process does instead (on a GPU it runs there).
Reported per paper: images/s per worker thread, each figure's ratio to ``decode``, and the workers that 1,000 images/s
need. Writes tables/benchmarks/pipeline-cpu.json. DML_BENCH_SCALE scales the rounds (0.1: a quick check).
"""

from __future__ import annotations

import os
import platform
import statistics
import time
from pathlib import Path

import pytest
import torch

from dml_core import provenance
from dml_core.atomic_io import atomic_write_json
from dml_core.data.images import load_image
from dml_core.data.transforms import ToModelInput, build_pixel_transform, build_transform
from dml_core.models.backbones import BACKBONES
from tests.benchmarks.loss_ops import MAIN_RECIPES, main_recipe
from tests.data.layouts import write_photo_jpeg

OUT = Path(os.environ.get("DML_BENCH_OUT") or Path(__file__).resolve().parents[2] / "tables" / "benchmarks")
SCALE = float(os.environ.get("DML_BENCH_SCALE", "1.0"))
ROUNDS = max(3, int(15 * SCALE))
SIZES = ((500, 375), (375, 500), (640, 427))  # CUB's typical sizes (width, height)
IMAGES_PER_SIZE = 4
BATCH = 100  # the papers' batches are 80-260 images
REPORT: dict[str, dict] = {}


@pytest.fixture(scope="module")
def jpegs(tmp_path_factory) -> list[Path]:
    folder = tmp_path_factory.mktemp("jpegs")
    return [
        write_photo_jpeg(folder / f"{index}.jpg", index, size)
        for index, size in enumerate(size for size in SIZES for _ in range(IMAGES_PER_SIZE))
    ]


def per_image_medians(variants: dict, items: list, rounds: int = ROUNDS) -> dict[str, float]:
    """Seconds per item of each variant (a function of one item): the median round, the variants alternating so
    that a busy moment of the machine falls on all of them alike.

    >>> medians = per_image_medians({"a": lambda item: None}, [1, 2], rounds=3)
    >>> list(medians), medians["a"] >= 0
    (['a'], True)
    """
    seconds: dict[str, list[float]] = {name: [] for name in variants}
    for _ in range(rounds):
        for name, variant in variants.items():
            started = time.perf_counter()
            for item in items:
                variant(item)
            seconds[name].append((time.perf_counter() - started) / len(items))
    return {name: statistics.median(values) for name, values in seconds.items()}


def _measure(paper: str, jpegs: list[Path]) -> dict:
    recipe = main_recipe(paper, "paper")
    spec, config = BACKBONES.lookup(recipe.model.backbone).input_spec, recipe.data.transforms
    pixels, per_image_float = build_pixel_transform(spec, config, True), build_transform(spec, config, True)
    to_model_input = ToModelInput(spec)
    crops = torch.stack([pixels(load_image(path)) for path in jpegs])
    batch = crops[torch.arange(BATCH) % len(crops)]
    variants = {
        "decode": load_image,
        "worker": lambda path: pixels(load_image(path)),
        "float_in_worker": lambda path: per_image_float(load_image(path)),
    }
    with _one_thread():
        seconds = per_image_medians(variants, jpegs)
        converted = per_image_medians({"to_model_input": to_model_input}, [batch])["to_model_input"]
    seconds["to_model_input"] = converted / BATCH
    return {
        "settings": f"{config.train_crop} {config.crop_size or spec.input_size} px, {spec.channel_order}",
        "images_per_second_per_thread": {name: 1 / value for name, value in seconds.items()},
        "ratio_to_decode": {name: value / seconds["decode"] for name, value in seconds.items()},
        "workers_for_1000_images_per_second": 1000 * seconds["worker"],
        "worker_over_float_in_worker": seconds["worker"] / seconds["float_in_worker"],
    }


class _one_thread:
    """torch on one thread while measuring, as in a DataLoader worker."""

    def __enter__(self):
        self.threads = torch.get_num_threads()
        torch.set_num_threads(1)

    def __exit__(self, *exc):
        torch.set_num_threads(self.threads)


@pytest.mark.parametrize("paper", list(MAIN_RECIPES))
def test_a_workers_cost_per_image(benchmark, paper, jpegs):
    REPORT[paper] = benchmark.pedantic(lambda: _measure(paper, jpegs), rounds=1, iterations=1)


def test_zz_write_report(benchmark):
    benchmark.pedantic(lambda: None, rounds=1, iterations=1)
    report = {
        "benchmark": "a DataLoader worker's cost per image on the PIL path, main recipe per paper",
        "machine": f"{platform.processor() or platform.machine()}, one thread",
        "environment": {**provenance.environment(), "git": provenance.git_state()},
        "images": f"{len(SIZES) * IMAGES_PER_SIZE} photo-like JPEGs (quality 90) at {', '.join(map(str, SIZES))}",
        "rounds": ROUNDS,
        "figures": {
            "decode": "load_image alone (the reference of the ratios)",
            "worker": "load_image then build_pixel_transform(train=True): uint8 crops, what a worker hands over",
            "float_in_worker": "load_image then build_transform(train=True): a worker's work before the float steps "
            "moved to the training device",
            "to_model_input": f"ToModelInput of a batch of {BATCH} crops on this CPU, per image",
        },
        "papers": REPORT,
    }
    atomic_write_json(OUT / "pipeline-cpu.json", report)
