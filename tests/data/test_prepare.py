"""``prepare``: a generated dataset by several processes at once (ranks of one run, local jobs); every image
decoded once; published checksums whatever a file's name, or a line saying what could not be checked; staging
copies of killed prepares removed; all or nothing: a failed or interrupted prepare leaves the data root as it found
it, so the next correct one succeeds."""

import importlib
import multiprocessing
import os
import shutil

import pytest

from dml_core.atomic_io import owner_tag
from dml_core.data.decode_check import CHUNK, check_images_decode
from dml_core.data.index import index_path, read_index
from dml_core.data.loading import load_split
from dml_core.data.prepare import downloads_folder, prepare
from dml_core.data.registry import get_spec
from dml_core.errors import InputError
from tests.data.layouts import (
    cars_archives,
    make_cars_kaggle,
    make_cub,
    make_tgz,
    make_zip_of,
    shrink_spec,
    use_catalog,
    write_jpeg,
)
from tests.test_atomic_io import dead_pid


def _prepare_and_load(root: str) -> int:
    glyphs = get_spec("embedded")
    prepare(glyphs, root, progress=False)
    return len(load_split(glyphs, root, "train").labels)


@pytest.mark.slow
def test_processes_generating_the_embedded_set_at_once_all_get_the_complete_set(tmp_path):
    (tmp_path / "embedded").mkdir()
    (tmp_path / "embedded" / "half-written.png").write_bytes(b"")  # a killed run's leftover, no index
    with multiprocessing.get_context("spawn").Pool(3) as pool:
        sizes = pool.map(_prepare_and_load, [str(tmp_path)] * 3)
    assert len(set(sizes)) == 1 and sizes[0] > 0
    assert index_path(tmp_path / "embedded").is_file() and read_index(tmp_path / "embedded")
    assert not (tmp_path / "embedded" / "half-written.png").exists()
    assert [path.name for path in tmp_path.iterdir()] == ["embedded"], "private folders are cleaned up"


def _tiny_cub(monkeypatch, tmp_path):
    expected = make_cub(tmp_path / "src")
    shrink_spec(monkeypatch, "cub200", expected)
    return expected


def test_a_truncated_jpeg_is_named_by_prepare_with_pils_reason(monkeypatch, tmp_path):
    expected = _tiny_cub(monkeypatch, tmp_path)
    for path, *_ in (expected[7], expected[2]):  # two bad images: the first in index order is named
        data = (tmp_path / "src" / path).read_bytes()
        (tmp_path / "src" / path).write_bytes(data[: len(data) // 2])
    with pytest.raises(InputError) as error:
        prepare(get_spec("cub200"), tmp_path / "data", [tmp_path / "src" / "CUB_200_2011"], progress=False)
    message = str(error.value)
    assert f"{expected[2][0]}: cannot decode image (Truncated File Read); the file is corrupt" in message
    assert "\n" not in message
    assert not index_path(tmp_path / "data" / "cub200").exists()


def test_the_first_undecodable_image_does_not_depend_on_the_threads(tmp_path):
    paths = []
    for i in range(3 * CHUNK + 5):
        write_jpeg(tmp_path / f"{i}.jpg", i)
        paths.append(tmp_path / f"{i}.jpg")
    for bad in (2 * CHUNK + 3, CHUNK + 1):
        paths[bad].write_bytes(b"not an image")
    for workers in (1, 2, 4):
        with pytest.raises(InputError, match=rf"/{CHUNK + 1}.jpg: cannot decode image"):
            check_images_decode(paths, progress=False, workers=workers)
    check_images_decode(paths[: CHUNK + 1], progress=False)


def test_a_renamed_published_archive_is_still_checked_by_its_content(monkeypatch, tmp_path):
    expected = make_cub(tmp_path / "src")
    published = make_tgz(tmp_path / "CUB_200_2011.tgz", tmp_path / "src", ["CUB_200_2011"])
    shrink_spec(monkeypatch, "cub200", expected, {"CUB_200_2011.tgz": published})
    (tmp_path / "src" / "CUB_200_2011" / "classes.txt").write_text("edited\n")
    other = make_tgz(tmp_path / "birds.tar.gz", tmp_path / "src", ["CUB_200_2011"])  # same top folder, other bytes
    pattern = r"birds.tar.gz: checksum mismatch: expected md5 \w+ \(the published CUB_200_2011.tgz, which unpacks to"
    with pytest.raises(InputError, match=pattern):
        prepare(get_spec("cub200"), tmp_path / "data", [other], progress=False)
    renamed = published.rename(tmp_path / "download")  # the published bytes under another name, no suffix even
    prepared = prepare(get_spec("cub200"), tmp_path / "data", [renamed], progress=False)
    assert prepared.notes == () and prepared.images_per_split == {"train": 6, "test": 6}


def test_what_cannot_be_checked_is_said_in_one_line_each(monkeypatch, tmp_path):
    expected = make_cub(tmp_path / "src" / "birds")  # repacked under another top folder: not the published archive
    shrink_spec(monkeypatch, "cub200", expected)
    repacked = make_tgz(tmp_path / "mine.tgz", tmp_path / "src", ["birds"])
    (note,) = prepare(get_spec("cub200"), tmp_path / "data", [repacked], progress=False).notes
    assert note == (
        f"{repacked}: md5 not checked: neither its name, its md5 nor its content (birds) is one of the published "
        "cub200 files (CUB_200_2011.tgz)"
    )
    folder = tmp_path / "src" / "birds" / "CUB_200_2011"
    (note,) = prepare(get_spec("cub200"), tmp_path / "other", [folder], progress=False).notes
    assert note == f"{folder}: a folder: no archive md5 to check (its annotations, identities and counts are checked)"


def test_a_killed_prepares_staging_copy_neither_blocks_nor_stays(monkeypatch, tmp_path):
    expected = _tiny_cub(monkeypatch, tmp_path)
    archive = make_tgz(tmp_path / "CUB_200_2011.tgz", tmp_path / "src", ["CUB_200_2011"])
    shrink_spec(monkeypatch, "cub200", expected, {"CUB_200_2011.tgz": archive})
    dataset_dir = tmp_path / "data" / "cub200"
    host = owner_tag().rsplit("-", 1)[0]
    stale = dataset_dir / f".extract-{host}-{dead_pid()}.x1y2z3w4"
    live = dataset_dir / f".extract-{host}-{os.getppid()}.a1b2c3d4"  # an extraction still running elsewhere
    for staging in (stale, live):
        shutil.copytree(tmp_path / "src" / "CUB_200_2011", staging / "CUB_200_2011")
    prepared = prepare(get_spec("cub200"), tmp_path / "data", [archive], progress=False)
    assert prepared.images_per_split == {"train": 6, "test": 6}
    assert not stale.exists() and live.exists()
    assert all(not row.path.startswith(".") for row in read_index(dataset_dir))


def tree(root) -> dict[str, tuple]:
    """Every entry under ``root`` (links not followed) with what would show a change: kind, size, modification."""
    entries = {}
    for path in sorted(root.rglob("*")):
        stat = path.lstat()
        entries[path.relative_to(root).as_posix()] = (path.is_symlink(), stat.st_size, stat.st_mtime_ns)
    return entries


def test_a_refused_folder_leaves_the_data_root_as_it_was_and_the_complete_one_is_then_taken(monkeypatch, tmp_path):
    expected = make_cars_kaggle(tmp_path / "complete")
    shrink_spec(monkeypatch, "cars196", expected)
    incomplete = tmp_path / "incomplete"
    shutil.copytree(tmp_path / "complete", incomplete)
    shutil.rmtree(next((incomplete / "car_data" / "car_data" / "test").iterdir()))  # one class folder missing
    data = tmp_path / "data"
    data.mkdir()
    with pytest.raises(InputError, match=r"listed images are missing"):
        prepare(get_spec("cars196"), data, [incomplete], progress=False)
    assert [path.name for path in data.iterdir() if not path.name.startswith(".")] == []  # no link left behind
    prepared = prepare(get_spec("cars196"), data, [tmp_path / "complete"], progress=False)
    assert prepared.images_per_split == {"train": 8, "test": 8}


def test_a_wrong_archive_leaves_nothing_and_a_failed_replacement_puts_the_copy_back(monkeypatch, tmp_path):
    expected = _tiny_cub(monkeypatch, tmp_path)
    data = tmp_path / "data"
    wrong = make_tgz(tmp_path / "foo.tgz", tmp_path / "src" / "CUB_200_2011", ["images"])  # images, no listing
    with pytest.raises(InputError, match=r"images\.txt not found"):
        prepare(get_spec("cub200"), data, [wrong], progress=False)
    assert not (data / "cub200").exists()
    prepare(get_spec("cub200"), data, [tmp_path / "src" / "CUB_200_2011"], progress=False)
    before = tree(data)
    (tmp_path / "src" / "CUB_200_2011" / "image_class_labels.txt").write_text("1 1\n")  # a damaged copy, same name
    damaged = make_tgz(tmp_path / "CUB_200_2011.tgz", tmp_path / "src", ["CUB_200_2011"])
    with pytest.raises(InputError):
        prepare(get_spec("cub200"), data, [damaged], progress=False)
    assert tree(data) == before
    assert len(read_index(data / "cub200")) == len(expected)


def test_a_source_whose_copy_fails_the_checks_is_taken_out_and_the_next_one_is_used(monkeypatch, http_server, tmp_path):
    url, served = http_server
    expected = make_cars_kaggle(tmp_path / "src")
    shrink_spec(monkeypatch, "cars196", expected)
    (good,) = cars_archives("kaggle", tmp_path, tmp_path / "src")
    (tmp_path / "src" / "anno_test.csv").write_text("")  # the test half's annotations lost
    bad = make_zip_of(tmp_path / "bad.zip", tmp_path / "src")
    served.files["/bad.zip"], served.files["/good.zip"] = bad.read_bytes(), good.read_bytes()
    routes = [[("stanford-cars.zip", f"{url}/bad.zip", None)], [("stanford-cars.zip", f"{url}/good.zip", None)]]
    use_catalog(monkeypatch, tmp_path / "catalog.yaml", {"cars196": routes})
    said = []
    prepared = prepare(get_spec("cars196"), tmp_path / "data", progress=False, report=said.append)
    assert len(said) == 1 and ": its copy fails the checks (cars196: " in said[0], said
    assert prepared.images_per_split == {"train": 8, "test": 8}
    assert not downloads_folder(prepared.dataset_dir).exists()


def test_ctrl_c_during_a_prepare_leaves_nothing_and_keeps_the_download(monkeypatch, http_server, tmp_path):
    url, served = http_server
    expected = _tiny_cub(monkeypatch, tmp_path)
    archive = make_tgz(tmp_path / "CUB_200_2011.tgz", tmp_path / "src", ["CUB_200_2011"])
    served.files["/cub.tgz"] = archive.read_bytes()
    shrink_spec(monkeypatch, "cub200", expected, {"CUB_200_2011.tgz": archive}, url=f"{url}/cub.tgz")

    def interrupted(*args, **kwargs):
        raise KeyboardInterrupt

    monkeypatch.setattr(importlib.import_module("dml_core.data.prepare"), "check_images_decode", interrupted)
    dataset_dir = tmp_path / "data" / "cub200"
    with pytest.raises(KeyboardInterrupt):
        prepare(get_spec("cub200"), tmp_path / "data", progress=False)
    assert [path.name for path in dataset_dir.iterdir()] == [".downloads"]
    assert [path.name for path in downloads_folder(dataset_dir).iterdir()] == ["CUB_200_2011.tgz"]
    monkeypatch.undo()
    shrink_spec(monkeypatch, "cub200", expected, {"CUB_200_2011.tgz": archive}, url=f"{url}/cub.tgz")
    prepare(get_spec("cub200"), tmp_path / "data", progress=False)
    assert len(served.ranges) == 1, "the finished download was used again, not fetched again"
