import pytest

from dml_core.data.index import read_index
from dml_core.data.prepare import prepare
from dml_core.data.registry import get_spec
from dml_core.errors import InputError
from tests.data.layouts import make_cub, make_tgz, shrink_spec


def _rows(dataset_dir):
    return sorted((row.path, row.label, row.split) for row in read_index(dataset_dir))


def test_archive_gives_the_class_split_not_the_classification_split(monkeypatch, tmp_path):
    source = tmp_path / "src"
    expected = make_cub(source)
    archive = make_tgz(tmp_path / "CUB_200_2011.tgz", source, ["CUB_200_2011"])
    shrink_spec(monkeypatch, "cub200", expected, {"CUB_200_2011.tgz": archive})
    prepared = prepare(get_spec("cub200"), tmp_path / "data", [archive], progress=False)
    assert _rows(prepared.dataset_dir) == sorted(expected)
    assert prepared.images_per_split == {"train": 6, "test": 6}
    assert all((prepared.dataset_dir / path).is_file() for path, _, _ in expected)


def test_extracted_folder_is_linked_and_indexed(monkeypatch, tmp_path):
    expected = make_cub(tmp_path / "src")
    shrink_spec(monkeypatch, "cub200", expected)
    prepared = prepare(get_spec("cub200"), tmp_path / "data", [tmp_path / "src" / "CUB_200_2011"], progress=False)
    assert (prepared.dataset_dir / "CUB_200_2011").is_symlink()
    assert _rows(prepared.dataset_dir) == sorted(expected)


def test_published_md5_refuses_another_archive(tmp_path):
    make_cub(tmp_path / "src")
    archive = make_tgz(tmp_path / "CUB_200_2011.tgz", tmp_path / "src", ["CUB_200_2011"])
    with pytest.raises(InputError, match=r"CUB_200_2011.tgz: checksum mismatch: expected md5 97eceeb1.*--archive DIR"):
        prepare(get_spec("cub200"), tmp_path / "data", [archive], progress=False)


def test_real_counts_refuse_a_partial_dataset_naming_everything(tmp_path):
    make_cub(tmp_path / "src")
    with pytest.raises(InputError) as error:
        prepare(get_spec("cub200"), tmp_path / "data", [tmp_path / "src" / "CUB_200_2011"], progress=False)
    message = str(error.value)
    assert "cub200" in message
    assert "split 'train': expected 5,864 images in 100 classes, found 6 images in 2 classes" in message
    assert f"root searched: {tmp_path / 'data' / 'cub200'}" in message
    assert not (tmp_path / "data" / "cub200" / "dml_index.csv").exists()


def test_missing_label_file_is_refused(tmp_path):
    make_cub(tmp_path / "src")
    (tmp_path / "src" / "CUB_200_2011" / "image_class_labels.txt").unlink()
    with pytest.raises(InputError, match=r"image_class_labels.txt not found under .* expected the extracted"):
        prepare(get_spec("cub200"), tmp_path / "data", [tmp_path / "src" / "CUB_200_2011"], progress=False)


def test_classification_split_folders_are_refused(tmp_path):
    for split in ("train", "test"):
        (tmp_path / "src" / "CUB" / split / "001.Bird").mkdir(parents=True)
    with pytest.raises(InputError, match=r"classification split, which is wrong for DML"):
        prepare(get_spec("cub200"), tmp_path / "data", [tmp_path / "src" / "CUB"], progress=False)


def test_missing_image_is_refused_by_name(monkeypatch, tmp_path):
    expected = make_cub(tmp_path / "src")
    shrink_spec(monkeypatch, "cub200", expected)
    (tmp_path / "src" / expected[0][0]).unlink()
    with pytest.raises(InputError, match=r"1 of 12 listed images are missing .*Bird_1_0000_1.jpg"):
        prepare(get_spec("cub200"), tmp_path / "data", [tmp_path / "src" / "CUB_200_2011"], progress=False)


def test_download_from_the_published_url(monkeypatch, http_server, tmp_path):
    url, served = http_server
    expected = make_cub(tmp_path / "src")
    archive = make_tgz(tmp_path / "CUB_200_2011.tgz", tmp_path / "src", ["CUB_200_2011"])
    served.files["/CUB_200_2011.tgz"] = archive.read_bytes()
    shrink_spec(monkeypatch, "cub200", expected, {"CUB_200_2011.tgz": archive}, url=f"{url}/CUB_200_2011.tgz")
    prepared = prepare(get_spec("cub200"), tmp_path / "data", progress=False)
    assert _rows(prepared.dataset_dir) == sorted(expected)
    assert served.ranges == [None]
    prepare(get_spec("cub200"), tmp_path / "data", progress=False)  # already there: verified again, nothing fetched
    assert served.ranges == [None]


def test_an_image_outside_a_numbered_class_folder_is_refused(monkeypatch, tmp_path):
    expected = make_cub(tmp_path / "src")
    shrink_spec(monkeypatch, "cub200", expected)
    images = tmp_path / "src" / "CUB_200_2011" / "images"
    (images / "001.Bird_1").rename(images / "Bird_1")
    images_txt = tmp_path / "src" / "CUB_200_2011" / "images.txt"
    images_txt.write_text(images_txt.read_text().replace("001.Bird_1/", "Bird_1/"))
    with pytest.raises(InputError, match=r"expected the image in a class folder carrying its id .*found 'Bird_1'"):
        prepare(get_spec("cub200"), tmp_path / "data", [tmp_path / "src" / "CUB_200_2011"], progress=False)
