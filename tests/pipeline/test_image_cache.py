"""The decoded uint8 cache: exactly the PIL path's resized pixels, refused when absent or stale, built once when
processes sharing a data root ask for it at the same time."""

import json
import multiprocessing
import time
import traceback
from pathlib import Path

import numpy as np
import pytest
import torch
from torchvision.transforms import v2

from dml_core.atomic_io import owner_tag
from dml_core.data import load_image, load_split
from dml_core.data.registry import get_spec
from dml_core.data.transforms import resize_step
from dml_core.errors import InputError
from dml_core.pipeline import image_cache
from dml_core.pipeline.image_cache import (
    LOCKS_FOLDER,
    build_cache,
    cache_dir,
    cache_problem,
    ensure_generated_cache,
    estimated_cache_bytes,
    load_cache,
)
from dml_core.pipeline.loaders import worker_context
from dml_core.recipes.settings import TransformSettings
from tests.test_atomic_io import dead_pid


def _entries(cache_folder: Path) -> list[str]:
    """The cache folder's entries but its build locks."""
    return sorted(path.name for path in cache_folder.iterdir() if path.name != LOCKS_FOLDER)


@pytest.mark.parametrize("mode", ["squash", "shorter_side"])
def test_cache_holds_the_pil_paths_resized_pixels(odd_sized_cub, mode):
    cub = get_spec("cub200")
    build_cache(cub, odd_sized_cub, "train", mode, 40, progress=False)
    cache = load_cache(cub, odd_sized_cub, "train", mode, 40)
    split = load_split(cub, odd_sized_cub, "train")
    resize = resize_step(TransformSettings(resize_mode=mode, resize=40))
    assert len(cache) == len(split)
    for position, path in enumerate(split.paths):
        expected = resize(v2.functional.to_image(load_image(path)))
        start, height, width = int(cache.offsets[position]), int(cache.heights[position]), int(cache.widths[position])
        stored = cache.pixels[start : start + 3 * height * width].view(3, height, width)
        assert torch.equal(stored, expected)
    assert (cache.heights == 40).all() if mode == "squash" else (cache.heights.minimum(cache.widths) == 40).all()


def test_missing_and_stale_caches_say_what_to_run(odd_sized_cub):
    cub = get_spec("cub200")
    with pytest.raises(
        InputError, match=r"no image cache .* run `nox -s dml -- prepare cub200 .* --cache squash --cache-size 40`"
    ):
        load_cache(cub, odd_sized_cub, "train", "squash", 40)
    build_cache(cub, odd_sized_cub, "train", "squash", 40, progress=False)
    index = odd_sized_cub / "cub200" / "dml_index.csv"
    index.write_text(index.read_text() + "\n")  # the dataset was prepared again since
    with pytest.raises(InputError, match="cache is stale"):
        load_cache(cub, odd_sized_cub, "train", "squash", 40)
    folder = cache_dir(odd_sized_cub, cub, "train", "squash", 40)
    assert _entries(folder.parent) == [folder.name]  # no staging folder left behind


def test_a_damaged_cache_record_is_refused_with_what_to_run(odd_sized_cub):
    cub = get_spec("cub200")
    folder = build_cache(cub, odd_sized_cub, "train", "squash", 40, progress=False)
    (folder / "meta.json").write_text('{"version": 1, "dataset"')  # cut off mid-write by hand
    expected = r"meta.json: not valid JSON .*; run `nox -s dml -- prepare cub200 .* --cache squash --cache-size 40`"
    with pytest.raises(InputError, match=expected):
        load_cache(cub, odd_sized_cub, "train", "squash", 40)
    assert cache_problem(cub, odd_sized_cub, "train", "squash", 40).startswith(str(folder / "meta.json"))


def test_the_generated_datasets_cache_is_built_on_first_use(tmp_path, copy_glyph_sets):
    glyphs = get_spec("embedded")
    assert not cache_dir(tmp_path, glyphs, "train", "squash", 24).exists()
    with pytest.raises(InputError, match="no image cache for embedded/train"):
        load_cache(glyphs, tmp_path, "train", "squash", 24)  # reading never writes
    assert list(tmp_path.iterdir()) == []
    copy_glyph_sets(tmp_path)  # the set as its first use generates it (tests/data/sources/test_embedded.py)
    ensure_generated_cache(glyphs, tmp_path, "train", "squash", 24)
    cache = load_cache(glyphs, tmp_path, "train", "squash", 24)
    assert cache_problem(glyphs, tmp_path, "train", "squash", 24) is None
    assert len(cache) == len(load_split(glyphs, tmp_path, "train"))
    assert (cache.heights == 24).all() and (cache.widths == 24).all()
    with pytest.raises(InputError, match="no image cache for cub200/train"):
        load_cache(get_spec("cub200"), tmp_path, "train", "squash", 24)  # a downloaded dataset's never is


def test_a_cache_whose_dataset_index_is_gone_says_so(odd_sized_cub):
    cub = get_spec("cub200")
    build_cache(cub, odd_sized_cub, "train", "squash", 40, progress=False)
    (odd_sized_cub / "cub200" / "dml_index.csv").unlink()
    with pytest.raises(InputError, match=r"meta.json: the dataset it was built from is not prepared \(no index\)"):
        load_cache(cub, odd_sized_cub, "train", "squash", 40)


def test_a_killed_builds_staging_folder_is_removed_by_the_next_build(odd_sized_cub):
    cub = get_spec("cub200")
    folder = cache_dir(odd_sized_cub, cub, "train", "squash", 40)
    stale = folder.with_name(f"{folder.name}.partial-{owner_tag().rsplit('-', 1)[0]}-{dead_pid()}")
    stale.mkdir(parents=True)
    (stale / "pixels.u8").write_bytes(b"\0" * 4096)  # a real one holds gigabytes
    build_cache(cub, odd_sized_cub, "train", "squash", 40, progress=False)
    assert _entries(folder.parent) == [folder.name]


@pytest.mark.parametrize("mode", ["squash", "shorter_side"])
def test_the_size_estimate_is_what_the_build_writes(odd_sized_cub, mode):
    cub = get_spec("cub200")
    images, estimated = estimated_cache_bytes(cub, odd_sized_cub, "train", mode, 40)
    folder = build_cache(cub, odd_sized_cub, "train", mode, 40, progress=False)
    assert (images, estimated) == (6, (folder / "pixels.u8").stat().st_size)
    assert estimated == 6 * 3 * 40 * 40 if mode == "squash" else estimated > 6 * 3 * 40 * 40  # wider than high


@pytest.mark.slow
def test_worker_processes_build_the_same_cache(odd_sized_cub):
    def built(workers: int) -> tuple[bytes, dict]:
        folder = build_cache(
            get_spec("cub200"), odd_sized_cub, "train", "shorter_side", 40, progress=False, workers=workers,
            worker_context=worker_context(),
        )  # fmt: skip
        return (folder / "pixels.u8").read_bytes(), dict(np.load(folder / "index.npz"))

    (pixels, index), (in_workers, workers_index) = built(0), built(2)
    assert in_workers == pixels and index.keys() == workers_index.keys()
    assert all(np.array_equal(index[name], workers_index[name]) for name in index)


def _first_use_of_the_generated_cache(root: str, barrier, log: str) -> None:
    """What each rank of a multi-process run does on its first step (``batch_source.pipeline_for_run``), with
    every build held open for a second and its span recorded, so that builds at the same time would overlap."""
    build = image_cache.build_cache

    def slow_build(*args, **kwargs):
        started = time.time()
        time.sleep(1.0)
        folder = build(*args, **kwargs)
        with open(log, "a", encoding="utf-8") as spans:
            spans.write(json.dumps([started, time.time()]) + "\n")
        return folder

    image_cache.build_cache = slow_build
    try:
        glyphs = get_spec("embedded")
        barrier.wait(timeout=120)
        ensure_generated_cache(glyphs, Path(root), "train", "squash", 24)
        load_cache(glyphs, Path(root), "train", "squash", 24)
    except BaseException:
        Path(f"{log}.error-{multiprocessing.current_process().name}").write_text(traceback.format_exc())
        raise


def test_processes_that_need_the_generated_cache_at_once_build_it_once(tmp_path, copy_glyph_sets):
    """Two ranks that built the cache at the same time each replaced the other's, under the other's reader: one of
    them failed with "Directory not empty" on its rename, or found no cache when it loaded."""
    copy_glyph_sets(tmp_path)
    log = tmp_path / "builds.jsonl"
    context = multiprocessing.get_context("fork")  # the dataset is there already: nothing but the cache to do
    barrier = context.Barrier(2)
    ranks = [
        context.Process(
            target=_first_use_of_the_generated_cache, args=(str(tmp_path), barrier, str(log)), name=f"rank{i}"
        )
        for i in range(2)
    ]
    for rank in ranks:
        rank.start()
    for rank in ranks:
        rank.join(timeout=300)
    errors = {path.name: path.read_text() for path in tmp_path.glob("builds.jsonl.error-*")}
    assert [rank.exitcode for rank in ranks] == [0, 0], errors
    spans = [json.loads(line) for line in log.read_text().splitlines()]
    assert len(spans) == 1, f"the cache was built {len(spans)} times: {spans}"
    folder = cache_dir(tmp_path, get_spec("embedded"), "train", "squash", 24)
    assert _entries(folder.parent) == [folder.name]  # no staging folder
