"""The decoded uint8 cache: exactly the PIL path's resized pixels, refused when absent or stale."""

import numpy as np
import pytest
import torch
from torchvision.transforms import v2

from dml_core.atomic_io import owner_tag
from dml_core.data import load_image, load_split
from dml_core.data.image_cache import (
    build_cache,
    cache_dir,
    cache_problem,
    ensure_generated_cache,
    estimated_cache_bytes,
    load_cache,
)
from dml_core.data.registry import get_spec
from dml_core.data.transforms import resize_step
from dml_core.errors import InputError
from dml_core.recipes.settings import TransformSettings
from dml_core.training.loaders import worker_context
from tests.test_atomic_io import dead_pid


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
        InputError, match=r"no image cache .* run `dml prepare cub200 .* --cache squash --cache-size 40`"
    ):
        load_cache(cub, odd_sized_cub, "train", "squash", 40)
    build_cache(cub, odd_sized_cub, "train", "squash", 40, progress=False)
    index = odd_sized_cub / "cub200" / "dml_index.csv"
    index.write_text(index.read_text() + "\n")  # the dataset was prepared again since
    with pytest.raises(InputError, match="cache is stale"):
        load_cache(cub, odd_sized_cub, "train", "squash", 40)
    folder = cache_dir(odd_sized_cub, cub, "train", "squash", 40)
    assert [path.name for path in folder.parent.iterdir()] == [folder.name]  # no staging folder left behind


def test_a_damaged_cache_record_is_refused_with_what_to_run(odd_sized_cub):
    cub = get_spec("cub200")
    folder = build_cache(cub, odd_sized_cub, "train", "squash", 40, progress=False)
    (folder / "meta.json").write_text('{"version": 1, "dataset"')  # cut off mid-write by hand
    expected = r"meta.json: not valid JSON .*; run `dml prepare cub200 .* --cache squash --cache-size 40`"
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
    assert [path.name for path in folder.parent.iterdir()] == [folder.name]


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
