"""The decoded uint8 caches a paper's runs will train from, prepared before anything trains.

Where a run trains from the cache (``choice.wants_cache``) and its dataset's cache is missing or stale, the preflight
of ``dml reproduce`` prepares it, so that ``nox -s reproduce-<key>`` on a GPU box takes the fast path without a
``dml prepare`` step. It first says what it will write (the images, the exact bytes, the disk's free space), then
decodes in as many worker processes as ``data.num_workers: auto`` would start. Where the disk cannot hold a cache and
keep ``DISK_HEADROOM`` free, the runs that say "auto" train on the PIL path (said, and recorded), and a run that says
"cache" is refused. A generated set's cache is left to the run. Under torchrun nothing is prepared (one rank would
build while the others time out in their first collective): a run that says "cache" needs its cache prepared first
(``missing_inputs`` says so), one that says "auto" trains on the PIL path where there is none.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Protocol

from dml_core.atomic_io import free_disk_bytes
from dml_core.data.registry import DatasetSpec
from dml_core.errors import InputError
from dml_core.output_paths import data_root as resolve_data_root
from dml_core.pipeline.choice import GIB, requires_cache, wants_cache
from dml_core.pipeline.image_cache import build_cache, cache_dir, cache_problem, estimated_cache_bytes
from dml_core.pipeline.loaders import loader_workers, worker_context
from dml_core.readable import readable_bytes
from dml_core.recipes.settings import Recipe

# Disk left free after a cache is written: room for the runs' checkpoints and results (their sizes: docs/tiers.md).
DISK_HEADROOM = GIB


class PlannedTraining(Protocol):
    """What the preparation reads of a planned run (``training.run_description.PlannedRun``: training is above this
    package)."""

    @property
    def name(self) -> str: ...

    @property
    def recipe(self) -> Recipe: ...

    @property
    def dataset(self) -> DatasetSpec: ...


@dataclass
class CacheToPrepare:
    """One missing or stale cache the runs need: where it goes, why it is needed, which runs need it and whether
    one of them says "cache" (so cannot fall back to the PIL path)."""

    dataset: DatasetSpec
    root: Path
    resize_mode: str
    resize: int
    problem: str
    runs: list[str] = field(default_factory=list)
    required: bool = False

    @property
    def name(self) -> str:
        return f"{self.dataset.name}/train ({self.resize_mode} {self.resize})"

    @property
    def folder(self) -> Path:
        return cache_dir(self.root, self.dataset, "train", self.resize_mode, self.resize)


def caches_to_prepare(
    plans: Sequence[PlannedTraining], data_root: Path | None, device_type: str
) -> list[CacheToPrepare]:
    """The missing or stale caches of prepared (not generated) datasets that the runs will train from on a device
    of ``device_type`` (the runner's choice: ``training.device_choice.chosen_device``)."""
    caches: dict[tuple, CacheToPrepare] = {}
    current: set[tuple] = set()  # checked once: a cache is read and hashed to be found current
    for plan in plans:
        recipe = plan.recipe
        spec = plan.dataset
        if spec.generated or not wants_cache(recipe.data, device_type):
            continue
        root = resolve_data_root(data_root, recipe.data.root)
        config = recipe.data.transforms
        key = (spec.name, root, config.resize_mode, config.resize)  # a spec holds dicts: its name keys it
        if key in current:
            continue
        if key not in caches:
            problem = cache_problem(spec, root, "train", config.resize_mode, config.resize)
            if problem is None:
                current.add(key)
                continue
            caches[key] = CacheToPrepare(spec, root, config.resize_mode, config.resize, problem)
        caches[key].runs.append(plan.name)
        caches[key].required |= requires_cache(recipe.data)
    return list(caches.values())


def prepare_caches(caches: Sequence[CacheToPrepare], log: Callable[[str], None] = print) -> None:
    """Build each cache the disk can hold, saying what it writes and how long it took; the others fall back to the
    PIL path (said), or, where a run says "cache", are refused."""
    for cache in caches:
        images, size = estimated_cache_bytes(cache.dataset, cache.root, "train", cache.resize_mode, cache.resize)
        free = free_disk_bytes(cache.folder)
        needs = f"{images:,} images, {readable_bytes(size)}, in {cache.folder}; {readable_bytes(free)} free there"
        if size + DISK_HEADROOM > free:
            if cache.required:
                raise InputError(
                    f"{cache.folder}: data.pipeline cache: the decoded image cache of {cache.name} needs {needs} "
                    f"(and {readable_bytes(DISK_HEADROOM)} kept free); free space there, put the data elsewhere "
                    "(--data-root), or train on the PIL path (--pipeline pil)"
                )
            log(
                f"data.pipeline auto: the decoded image cache of {cache.name} does not fit ({needs}; "
                f"{readable_bytes(DISK_HEADROOM)} kept free): {len(cache.runs)} run(s) train on the PIL path"
            )
            continue
        workers = loader_workers("auto")
        decoders = f"{workers} worker processes" if workers else "this process"
        log(
            f"data.pipeline: preparing the decoded image cache of {cache.name} for {len(cache.runs)} run(s): {needs}; "
            f"decoding every image once, in {decoders}"
        )
        started = time.perf_counter()
        build_cache(
            cache.dataset, cache.root, "train", cache.resize_mode, cache.resize, workers=workers,
            worker_context=worker_context(),
        )  # fmt: skip
        log(f"data.pipeline: cache of {cache.name} ready in {time.perf_counter() - started:.0f} s")
