import pytest

from dml_core.data.index import read_index
from dml_core.data.prepare import downloads_folder, prepare
from dml_core.data.registry import get_spec
from dml_core.errors import InputError
from tests.data.layouts import make_sop, make_zip, shrink_spec


def test_official_files_define_the_split(monkeypatch, tmp_path):
    expected = make_sop(tmp_path / "src")
    archive = make_zip(tmp_path / "Stanford_Online_Products.zip", tmp_path / "src", "Stanford_Online_Products")
    shrink_spec(monkeypatch, "sop", expected, {"Stanford_Online_Products.zip": archive})
    prepared = prepare(get_spec("sop"), tmp_path / "data", [archive], progress=False)
    assert sorted((row.path, row.label, row.split) for row in read_index(prepared.dataset_dir)) == sorted(expected)


def test_download_resumes_a_truncated_archive(monkeypatch, http_server, tmp_path):
    url, served = http_server
    expected = make_sop(tmp_path / "src")
    archive = make_zip(tmp_path / "Stanford_Online_Products.zip", tmp_path / "src", "Stanford_Online_Products")
    data = archive.read_bytes()
    served.files["/sop.zip"] = data
    shrink_spec(monkeypatch, "sop", expected, {"Stanford_Online_Products.zip": archive}, url=f"{url}/sop.zip")
    dataset_dir = tmp_path / "data" / "sop"
    downloads_folder(dataset_dir).mkdir(parents=True)
    (downloads_folder(dataset_dir) / "Stanford_Online_Products.zip.part").write_bytes(data[: len(data) // 3])
    prepare(get_spec("sop"), tmp_path / "data", progress=False)
    assert served.ranges == [f"bytes={len(data) // 3}-"]
    assert len(read_index(dataset_dir)) == len(expected)
    assert not downloads_folder(dataset_dir).exists()  # the copy is prepared: its archive is spare


def test_missing_test_listing_is_refused(tmp_path):
    make_sop(tmp_path / "src")
    (tmp_path / "src" / "Stanford_Online_Products" / "Ebay_test.txt").unlink()
    with pytest.raises(InputError, match=r"sop: Ebay_test.txt not found"):
        prepare(get_spec("sop"), tmp_path / "data", [tmp_path / "src" / "Stanford_Online_Products"], progress=False)


def test_a_super_class_id_that_disagrees_with_its_folder_is_refused(monkeypatch, tmp_path):
    expected = make_sop(tmp_path / "src")
    shrink_spec(monkeypatch, "sop", expected)
    listing = tmp_path / "src" / "Stanford_Online_Products" / "Ebay_test.txt"
    lines = listing.read_text().splitlines()
    lines[1] = lines[1].replace(" 1 bicycle_final", " 2 bicycle_final")
    listing.write_text("\n".join(lines) + "\n")
    with pytest.raises(InputError, match=r"Ebay_test.txt: line 2: \S+: super_class_id: expected 1 \(its folder's\)"):
        prepare(get_spec("sop"), tmp_path / "data", [tmp_path / "src" / "Stanford_Online_Products"], progress=False)
