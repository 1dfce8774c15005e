"""A decoded uint8 image cache per dataset split and resize mode, memory-mapped.

JPEG decoding and resizing dominate a data loader's CPU time; on a fast GPU they are the bottleneck. The cache
stores each image exactly as the PIL path has it after its resize step (``ToImage`` then the recipe's
``Resize``), as uint8 CHW, back to back in one flat file, with each image's offset and size beside it. Training
then only crops, flips and normalises, in batch, on the device (``batch_augment``).

Layout (one folder per split and resize mode, ``<root>/<dataset>/cache/<split>-<mode><size>/``):
``pixels.u8`` (flat uint8), ``index.npz`` (offsets, heights, widths, labels) and ``meta.json`` (dataset, split,
resize mode and size, number of images, sha256 of the dataset index it was built from). Written into a
temporary folder and renamed into place, so a cache is either complete or absent.
"""

from __future__ import annotations

import functools
import hashlib
import shutil
from dataclasses import dataclass
from multiprocessing.context import BaseContext
from pathlib import Path

import numpy as np
import torch
from filelock import FileLock
from torch.utils.data import DataLoader
from tqdm import tqdm

from dml_core.atomic_io import atomic_write_json, owner_tag, read_json_object, remove_stale_temporaries
from dml_core.command_line import DML
from dml_core.data.images import ImageDataset, image_size
from dml_core.data.index import index_path
from dml_core.data.loading import load_split
from dml_core.data.registry import DatasetSpec
from dml_core.data.transforms import resize_step
from dml_core.errors import InputError
from dml_core.recipes.settings import TransformSettings

CACHE_VERSION = 1
LOCKS_FOLDER = ".locks"


def cache_dir(root: Path, spec: DatasetSpec, split: str, resize_mode: str, resize: int) -> Path:
    return Path(root) / spec.name / "cache" / f"{split}-{resize_mode}{resize}"


def _build_lock(root: Path, spec: DatasetSpec, split: str, resize_mode: str, resize: int) -> FileLock:
    """The lock one builder of this cache holds (an flock: released when its holder ends, however it ends; re-entrant
    in a thread). Its file stays, in ``cache/.locks/``: unlinking a lock file races with its next taker."""
    folder = cache_dir(root, spec, split, resize_mode, resize)
    locks = folder.parent / LOCKS_FOLDER
    locks.mkdir(parents=True, exist_ok=True)
    return FileLock(locks / f"{folder.name}.lock", is_singleton=True)


def _index_sha256(root: Path, spec: DatasetSpec) -> str:
    return hashlib.sha256(index_path(Path(root) / spec.name).read_bytes()).hexdigest()


def build_cache(
    spec: DatasetSpec,
    root: Path,
    split: str,
    resize_mode: str,
    resize: int,
    progress: bool = True,
    workers: int = 0,
    worker_context: BaseContext | None = None,
) -> Path:
    """Decode and resize every image of a split once; return the cache folder. ``workers`` processes decode (in
    order; ``worker_context`` starts them: a process that has used CUDA must not fork them), 0: this process.
    Holds the cache's build lock: a second builder waits, then builds again."""
    with _build_lock(root, spec, split, resize_mode, resize):
        return _write_cache(spec, root, split, resize_mode, resize, progress, workers, worker_context)


def _write_cache(
    spec: DatasetSpec,
    root: Path,
    split: str,
    resize_mode: str,
    resize: int,
    progress: bool,
    workers: int,
    worker_context: BaseContext | None,
) -> Path:
    # torchvision only where a transform is built: its import is heavy (its ops load torch._dynamo)
    from torchvision.transforms import v2

    split_index = load_split(spec, root, split)
    resize_op = resize_step(TransformSettings(resize_mode=resize_mode, resize=resize))
    decoded = DataLoader(
        ImageDataset(split_index, v2.Compose([v2.ToImage(), resize_op])),
        batch_size=None,
        num_workers=workers,
        multiprocessing_context=worker_context if workers else None,
    )
    target = cache_dir(root, spec, split, resize_mode, resize)
    # What killed builds left (their owner no longer runs) is removed first.
    remove_stale_temporaries(target.parent, f"{target.name}.partial-")
    staging = target.with_name(f"{target.name}.partial-{owner_tag()}")
    shutil.rmtree(staging, ignore_errors=True)
    staging.mkdir(parents=True)
    n = len(split_index)
    offsets, heights, widths = np.zeros(n + 1, np.int64), np.zeros(n, np.int64), np.zeros(n, np.int64)
    with open(staging / "pixels.u8", "wb") as pixels:
        for image, _, i in tqdm(decoded, total=n, desc=f"cache {spec.name}/{split}", disable=not progress):
            heights[i], widths[i] = image.shape[1:]
            pixels.write(image.contiguous().numpy().tobytes())
            offsets[i + 1] = offsets[i] + image.numel()
    np.savez(staging / "index.npz", offsets=offsets, heights=heights, widths=widths, labels=split_index.labels)
    atomic_write_json(
        staging / "meta.json",
        {
            "version": CACHE_VERSION,
            "dataset": spec.name,
            "split": split,
            "resize_mode": resize_mode,
            "resize": resize,
            "images": n,
            "index_sha256": _index_sha256(root, spec),
        },
    )
    shutil.rmtree(target, ignore_errors=True)
    staging.rename(target)
    return target


def estimated_cache_bytes(spec: DatasetSpec, root: Path, split: str, resize_mode: str, resize: int) -> tuple[int, int]:
    """The images of a split and the bytes ``build_cache`` will write for them, from the image files' headers (no
    decoding) and torchvision's own resize rule (run on shape-only tensors)."""
    split_index = load_split(spec, root, split)
    resize_op = resize_step(TransformSettings(resize_mode=resize_mode, resize=resize))

    @functools.cache
    def resized_pixels(width: int, height: int) -> int:
        return resize_op(torch.empty(3, height, width, dtype=torch.uint8, device="meta")).numel()

    return len(split_index), sum(resized_pixels(*image_size(path)) for path in split_index.paths)


@dataclass
class ImageCache:
    """A loaded cache: flat uint8 pixels (memory-mapped, or moved to a device) and per-image geometry."""

    pixels: torch.Tensor  # (total,) uint8
    offsets: torch.Tensor  # (n,) int64, start of each image's CHW block
    heights: torch.Tensor  # (n,)
    widths: torch.Tensor  # (n,)
    labels: np.ndarray

    def __len__(self) -> int:
        return len(self.offsets)

    def to(self, device: torch.device) -> ImageCache:
        return ImageCache(
            self.pixels.to(device),
            self.offsets.to(device),
            self.heights.to(device),
            self.widths.to(device),
            self.labels,
        )


def cache_problem(spec: DatasetSpec, root: Path, split: str, resize_mode: str, resize: int) -> str | None:
    """Why the cache cannot be used (missing, or stale: built from another index or cache version), with the
    command that (re)builds it; None when it is there and current."""
    folder = cache_dir(root, spec, split, resize_mode, resize)
    meta_path = folder / "meta.json"
    rebuild = f"run `{DML} prepare {spec.name} --root {root} --cache {resize_mode} --cache-size {resize}`"
    if not meta_path.is_file():
        return f"{folder}: no image cache for {spec.name}/{split} ({resize_mode} {resize}); {rebuild}"
    try:
        meta = read_json_object(meta_path, "image cache metadata")
    except InputError as damaged:
        return f"{damaged}; {rebuild}"
    if not index_path(Path(root) / spec.name).is_file():
        return f"{meta_path}: the dataset it was built from is not prepared (no index); prepare it, then {rebuild}"
    if meta.get("version") != CACHE_VERSION or meta.get("index_sha256") != _index_sha256(root, spec):
        return f"{meta_path}: cache is stale (built from another index or version); {rebuild}"
    return None


def ensure_generated_cache(spec: DatasetSpec, root: Path, split: str, resize_mode: str, resize: int) -> None:
    """Build a generated dataset's cache (seconds) unless a current one is there; a run calls it before
    ``load_cache``, after ``data.prepare.ensure_generated``. A downloaded dataset's is left to ``dml prepare``."""
    if not spec.generated:
        return
    # Checked again under the lock: the ranks of a multi-process run all get here at once, and those that waited
    # find the cache the first one built (two builds would each replace the other's, under its readers).
    with _build_lock(root, spec, split, resize_mode, resize):
        if cache_problem(spec, root, split, resize_mode, resize):
            build_cache(spec, root, split, resize_mode, resize, progress=False)


def load_cache(spec: DatasetSpec, root: Path, split: str, resize_mode: str, resize: int) -> ImageCache:
    """Open a cache built by ``build_cache``; refuse a missing or stale one with what to do (reading never
    writes: ``ensure_generated_cache`` builds a generated dataset's)."""
    problem = cache_problem(spec, root, split, resize_mode, resize)
    if problem:
        raise InputError(problem)
    folder = cache_dir(root, spec, split, resize_mode, resize)
    index = np.load(folder / "index.npz")
    pixels = np.memmap(folder / "pixels.u8", dtype=np.uint8, mode="c")  # copy-on-write: never written
    if len(pixels) != int(index["offsets"][-1]):
        raise InputError(f"{folder / 'pixels.u8'}: expected {int(index['offsets'][-1])} bytes, found {len(pixels)}")
    return ImageCache(
        torch.from_numpy(np.asarray(pixels)),
        torch.from_numpy(index["offsets"][:-1].copy()),
        torch.from_numpy(index["heights"].copy()),
        torch.from_numpy(index["widths"].copy()),
        index["labels"],
    )
