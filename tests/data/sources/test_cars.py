"""Cars196 from its three layouts (original, devkit, Kaggle class folders), each from archives and from a folder:
the same classes, counts and DML split; a copy whose class names, per-class counts or image classes differ is
refused, naming the class."""

from collections import Counter

import pytest

from dml_core.data.index import read_index
from dml_core.data.prepare import prepare
from dml_core.data.registry import get_spec
from dml_core.data.sources.cars_classes import canonical_classes
from dml_core.data.sources.cars_mat import read_annotations
from dml_core.errors import InputError
from tests.data.layouts import (
    CARS_LAYOUTS,
    TINY_CAR_NAMES,
    cars_archives,
    make_cars,
    make_cars_devkit,
    make_cars_kaggle,
    shrink_spec,
    write_cars_annos,
    write_class_names,
)


def _rows(dataset_dir):
    return sorted((row.path, row.label, row.split) for row in read_index(dataset_dir))


def test_annotations_are_read_from_the_struct_array(tmp_path):
    write_cars_annos(tmp_path / "cars_annos.mat", [("car_ims/000001.jpg", 14, 0), ("car_ims/000002.jpg", 196, 1)])
    assert read_annotations(tmp_path / "cars_annos.mat") == [
        ("car_ims/000001.jpg", 14),
        ("car_ims/000002.jpg", 196),
    ]


def test_the_canonical_classes_are_the_published_dml_split():
    classes = canonical_classes()
    assert len(classes.names) == 196 and classes.names[0] == "AM General Hummer SUV 2000"
    assert classes.names[173] == "Ram C/V Cargo Van Minivan 2012"
    assert sum(n for class_id, n in classes.images.items() if class_id <= 98) == 8054
    assert sum(n for class_id, n in classes.images.items() if class_id > 98) == 8131


@pytest.mark.parametrize("form", ["archives", "folder"])
@pytest.mark.parametrize("layout", sorted(CARS_LAYOUTS))
def test_every_layout_gives_the_same_classes_counts_and_split(monkeypatch, tmp_path, layout, form):
    reference = make_cars(tmp_path / "reference")
    expected = CARS_LAYOUTS[layout](tmp_path / "src")
    archives = cars_archives(layout, tmp_path, tmp_path / "src")
    shrink_spec(monkeypatch, "cars196", expected, {path.name: path for path in archives})
    given = archives if form == "archives" else [tmp_path / "src"]
    prepared = prepare(get_spec("cars196"), tmp_path / "data", given, progress=False)
    rows = _rows(prepared.dataset_dir)
    if form == "archives":
        assert rows == sorted(expected)
    assert Counter((label, split) for _, label, split in rows) == Counter(
        (label, split) for _, label, split in reference
    )
    assert prepared.images_per_split == {"train": 8, "test": 8}


def test_a_copy_with_another_class_count_is_refused_naming_the_class(monkeypatch, tmp_path):
    expected = make_cars_kaggle(tmp_path / "src")
    shrink_spec(monkeypatch, "cars196", expected)
    listing = tmp_path / "src" / "anno_train.csv"
    lines = listing.read_text().splitlines()
    listing.write_text("\n".join(lines[1:]) + "\n")  # the first image of class 1 is no longer annotated
    with pytest.raises(InputError, match=r"anno_train.csv: class 1 \(Car model 1\): expected 4 images \(the "
                       r"published annotations\), found 3"):  # fmt: skip
        prepare(get_spec("cars196"), tmp_path / "data", [tmp_path / "src"], progress=False)


def test_a_copy_with_another_class_name_is_refused_naming_the_class(monkeypatch, tmp_path):
    expected = make_cars_devkit(tmp_path / "src")
    shrink_spec(monkeypatch, "cars196", expected)
    names = list(TINY_CAR_NAMES)
    names[98] = "Car model 99 Coupe"
    write_class_names(tmp_path / "src" / "devkit" / "cars_meta.mat", names)
    with pytest.raises(InputError, match=r"cars_meta.mat: class 99: name: expected 'Car model 99' \(the published "
                       r"cars_meta.mat\), found 'Car model 99 Coupe'"):  # fmt: skip
        prepare(get_spec("cars196"), tmp_path / "data", [tmp_path / "src"], progress=False)


def test_kaggle_annotations_that_disagree_with_the_class_folders_are_refused(monkeypatch, tmp_path):
    make_cars_kaggle(tmp_path / "src", swap=(2, 99))
    shrink_spec(monkeypatch, "cars196", make_cars_kaggle(tmp_path / "published"))
    pattern = (
        r"anno_train.csv: line 3: 00003.jpg: class: expected 2 \(its class folder 'Ram C-V Cargo Van Minivan 2012' "
        r"says so\), found 99"
    )
    with pytest.raises(InputError, match=pattern):
        prepare(get_spec("cars196"), tmp_path / "data", [tmp_path / "src"], progress=False)


def test_a_devkit_annotation_checksum_without_public_evidence_is_reported_not_refused(monkeypatch, tmp_path):
    expected = make_cars_devkit(tmp_path / "src")
    published = tmp_path / "published"
    make_cars_devkit(published, classes=(1, 2, 99, 100, 101))  # another copy's files: other md5s
    recorded = {name: published / "devkit" / name for name in ("cars_train_annos.mat", "cars_meta.mat")}
    shrink_spec(monkeypatch, "cars196", expected, recorded)
    assert [known.gates for known in get_spec("cars196").files] == [False, False]  # the packaged catalog says so
    prepared = prepare(get_spec("cars196"), tmp_path / "data", [tmp_path / "src"], progress=False)
    assert prepared.images_per_split == {"train": 8, "test": 8}
    annotations = [note for note in prepared.notes if "a checksum of" in note]
    assert len(annotations) == 1 and "src/devkit/cars_train_annos.mat: md5 " in annotations[0]
    assert "a checksum of cars_train_annos.mat that no public source gives (so it does not refuse" in annotations[0]


def test_a_checksum_with_public_evidence_still_refuses_another_file(monkeypatch, tmp_path):
    make_cars_devkit(tmp_path / "src", swap=(2, 99))  # the same counts, two classes' ids exchanged
    published = tmp_path / "published"
    labels = {"cars_test_annos_withlabels.mat": published / "cars_test_annos_withlabels.mat"}
    shrink_spec(monkeypatch, "cars196", make_cars_devkit(published), labels)
    with pytest.raises(InputError, match=r"src/cars_test_annos_withlabels.mat: checksum mismatch: expected md5 \w+ "
                       r"\(the published cars_test_annos_withlabels.mat\)"):  # fmt: skip
        prepare(get_spec("cars196"), tmp_path / "data", [tmp_path / "src"], progress=False)


def test_the_test_labels_under_a_browsers_name_and_a_stray_cars_annos_are_fine(monkeypatch, tmp_path):
    expected = make_cars_devkit(tmp_path / "src")
    labels = tmp_path / "src" / "cars_test_annos_withlabels.mat"
    labels = labels.rename(labels.with_name("cars_test_annos_withlabels (1).mat"))
    write_cars_annos(tmp_path / "src" / "cars_annos.mat", [])  # Kaggle's devkit copy ships one without car_ims/
    devkit = tmp_path / "src" / "devkit"
    published = {"cars_train_annos.mat": devkit / "cars_train_annos.mat", "cars_meta.mat": devkit / "cars_meta.mat"}
    shrink_spec(monkeypatch, "cars196", expected, {**published, "cars_test_annos_withlabels.mat": labels})
    prepared = prepare(get_spec("cars196"), tmp_path / "data", [tmp_path / "src"], progress=False)
    assert prepared.images_per_split == {"train": 8, "test": 8}


def test_devkit_without_the_test_labels_says_where_they_come_from(monkeypatch, tmp_path):
    shrink_spec(monkeypatch, "cars196", make_cars_devkit(tmp_path / "src"))
    (tmp_path / "src" / "cars_test_annos_withlabels.mat").unlink()
    with pytest.raises(InputError, match=r"cars_test_annos_withlabels.mat not found .*devkit's cars_test_annos.mat "
                       r"carries no classes"):  # fmt: skip
        prepare(get_spec("cars196"), tmp_path / "data", [tmp_path / "src"], progress=False)


def test_image_folders_without_annotations_are_refused(tmp_path):
    (tmp_path / "src" / "cars_train").mkdir(parents=True)
    with pytest.raises(InputError, match=r"found cars_train/ or cars_test/ .* the images alone carry no class ids"):
        prepare(get_spec("cars196"), tmp_path / "data", [tmp_path / "src"], progress=False)


def test_without_a_copy_the_message_names_the_layouts_and_the_manual_routes(tmp_path):
    with pytest.raises(InputError) as error:
        prepare(get_spec("cars196"), tmp_path / "data", progress=False, allow_download=False)
    message = str(error.value)
    assert "no Cars196 annotation files" in message and "the devkit layout" in message
    kaggle = "`kaggle datasets download -d jutrera/stanford-car-dataset-by-classes-folder`"
    assert f"{kaggle}, then `nox -s dml -- prepare " in message
    assert "--archive stanford-car-dataset-by-classes-folder.zip`" in message


def test_published_md5_refuses_another_annotation_file(tmp_path):
    make_cars(tmp_path / "src")
    with pytest.raises(InputError, match=r"cars_annos.mat: checksum mismatch: expected md5 b407c608"):
        prepare(get_spec("cars196"), tmp_path / "data", [tmp_path / "src" / "cars_annos.mat"], progress=False)
