import pytest

from dml_core.data.index import read_index
from dml_core.data.prepare import prepare
from dml_core.data.registry import get_spec
from dml_core.data.sources.cars import read_annotations
from dml_core.errors import InputError
from tests.data.layouts import make_cars, make_tgz, shrink_spec, write_cars_annos


def test_annotations_are_read_from_the_struct_array(tmp_path):
    write_cars_annos(tmp_path / "cars_annos.mat", [("car_ims/000001.jpg", 14, 0), ("car_ims/000002.jpg", 196, 1)])
    assert read_annotations(tmp_path / "cars_annos.mat") == [
        ("car_ims/000001.jpg", 14),
        ("car_ims/000002.jpg", 196),
    ]


def test_archive_and_mat_give_classes_1_to_98_for_training(monkeypatch, tmp_path):
    expected = make_cars(tmp_path / "src")
    archive = make_tgz(tmp_path / "car_ims.tgz", tmp_path / "src", ["car_ims"])
    mat = tmp_path / "src" / "cars_annos.mat"
    shrink_spec(monkeypatch, "cars196", expected, {"car_ims.tgz": archive, "cars_annos.mat": mat})
    prepared = prepare(get_spec("cars196"), tmp_path / "data", [archive, mat], progress=False)
    rows = sorted((row.path, row.label, row.split) for row in read_index(prepared.dataset_dir))
    assert rows == sorted(expected)


def test_no_public_download_says_what_to_do(tmp_path):
    with pytest.raises(InputError, match=r"cars_annos.mat not found.*--archive car_ims.tgz --archive cars_annos.mat"):
        prepare(get_spec("cars196"), tmp_path / "data", progress=False)


def test_devkit_classification_split_is_refused(tmp_path):
    (tmp_path / "src" / "cars_train").mkdir(parents=True)
    write_cars_annos(tmp_path / "src" / "devkit" / "cars_train_annos.mat", [])
    with pytest.raises(InputError, match=r"classification split \(8,144/8,041\), wrong for DML"):
        prepare(get_spec("cars196"), tmp_path / "data", [tmp_path / "src"], progress=False)


def test_published_md5_refuses_another_annotation_file(tmp_path):
    make_cars(tmp_path / "src")
    with pytest.raises(InputError, match=r"cars_annos.mat: checksum mismatch: expected md5 b407c608"):
        prepare(get_spec("cars196"), tmp_path / "data", [tmp_path / "src" / "cars_annos.mat"], progress=False)
