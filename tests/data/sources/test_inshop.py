import pytest

from dml_core.data.index import read_index
from dml_core.data.prepare import prepare
from dml_core.data.registry import get_spec
from dml_core.errors import InputError
from tests.data.layouts import make_inshop, make_zip, shrink_spec


def test_image_zip_and_partition_file_give_train_query_gallery(monkeypatch, tmp_path):
    expected = make_inshop(tmp_path / "src")
    image_zip = make_zip(tmp_path / "img.zip", tmp_path / "src", "img")
    shrink_spec(monkeypatch, "inshop", expected)
    listing = tmp_path / "src" / "Eval" / "list_eval_partition.txt"
    prepared = prepare(get_spec("inshop"), tmp_path / "data", [image_zip, listing], progress=False)
    assert sorted((row.path, row.label, row.split) for row in read_index(prepared.dataset_dir)) == sorted(expected)
    assert prepared.images_per_split == {"train": 4, "query": 2, "gallery": 3}
    assert prepared.notes == tuple(
        f"{source}: md5 not checked: In-Shop Clothes Retrieval (DeepFashion) publishes no checksums (its "
        "annotations and counts are)"
        for source in (image_zip, listing)
    )


def test_folder_with_eval_subfolder_resolves_images(monkeypatch, tmp_path):
    expected = make_inshop(tmp_path / "src" / "In-shop Clothes Retrieval Benchmark")
    shrink_spec(monkeypatch, "inshop", expected)
    prepared = prepare(get_spec("inshop"), tmp_path / "data", [tmp_path / "src"], progress=False)
    paths = {row.path for row in read_index(prepared.dataset_dir)}
    assert all(path.startswith("src/In-shop Clothes Retrieval Benchmark/img/") for path in paths)


def test_unknown_status_is_refused(tmp_path):
    make_inshop(tmp_path / "src")
    listing = tmp_path / "src" / "Eval" / "list_eval_partition.txt"
    listing.write_text(listing.read_text().replace("query", "val", 1))
    with pytest.raises(InputError, match=r"line \d+: evaluation_status: expected one of train/query/gallery"):
        prepare(get_spec("inshop"), tmp_path / "data", [tmp_path / "src"], progress=False)
