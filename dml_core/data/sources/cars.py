"""Cars196 from any of the layouts its copies come in today: the original (``car_ims/`` + ``cars_annos.mat``), the
devkit (``cars_train/``, ``cars_test/``, the devkit's annotation files and the test labels) and Kaggle's class
folders (``car_data/car_data/{train,test}/<class name>/`` + ``names.csv``, ``anno_*.csv``), each read by its own
module. Class ids always come from an annotation file that lists them, never from sorted folder names.

DML split: classes 1-98 train, 99-196 test, over the union of the classification halves (the ``test`` flag and the
devkit's halves are the classification split, used for nothing else). Every copy must carry the published class
names and per-class image counts (``cars_classes``); ``prepare`` compares the annotation files
(:func:`annotation_files`) with their recorded md5s, since in the Stanford layouts nothing else carries an image's
class: a difference refuses the copy where public evidence gives the md5 (``cars_annos.mat``, the test labels) and is
reported where none does (the devkit's own files)."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

from dml_core.data.index import IndexRow
from dml_core.data.sources import cars_classes, cars_kaggle, cars_mat
from dml_core.data.sources.cars_listing import CarsListing
from dml_core.data.sources.identity import published_split
from dml_core.data.sources.locate import check_images_exist, find_files
from dml_core.errors import InputError

DATASET = "cars196"
LAST_TRAIN_CLASS = 98
LAYOUTS = (
    "the original layout (car_ims/ and cars_annos.mat)",
    "the devkit layout (cars_train/, cars_test/, devkit/cars_train_annos.mat, devkit/cars_meta.mat, "
    "cars_test_annos_withlabels.mat)",
    "Kaggle's class-folder layout (car_data/car_data/{train,test}/, names.csv, anno_train.csv, anno_test.csv)",
)


def _found(dataset_dir: Path, name: str) -> bool:
    return bool(find_files(dataset_dir, name))


def _reader(dataset_dir: Path) -> Callable[[Path], CarsListing]:
    """The layout ``dataset_dir`` holds, by its annotation files (a copy may carry files of another layout:
    Kaggle's devkit copy ships cars_annos.mat without car_ims/)."""
    if _found(dataset_dir, "cars_annos.mat") and _found(dataset_dir, "car_ims"):
        return cars_mat.read_original
    if _found(dataset_dir, "cars_train_annos.mat"):
        return cars_mat.read_devkit
    if _found(dataset_dir, "anno_train.csv") or _found(dataset_dir, "names.csv"):
        return cars_kaggle.read_class_folders
    if _found(dataset_dir, "cars_annos.mat"):
        return cars_mat.read_original  # it names the images it misses
    if _found(dataset_dir, "cars_train") or _found(dataset_dir, "cars_test"):
        raise InputError(
            f"{DATASET}: found cars_train/ or cars_test/ under {dataset_dir} but not devkit/cars_train_annos.mat: "
            f"the images alone carry no class ids; add car_devkit.tgz and cars_test_annos_withlabels.mat "
            f"(dml prepare cars196 --root DIR --archive car_devkit.tgz --archive cars_test_annos_withlabels.mat)"
        )
    raise InputError(f"{DATASET}: no Cars196 annotation files under {dataset_dir}; expected {'; or '.join(LAYOUTS)}.")


def read_listing(dataset_dir: Path) -> CarsListing:
    """The images and class ids of the copy under ``dataset_dir``, checked against the published classes."""
    listing = _reader(Path(dataset_dir))(Path(dataset_dir))
    cars_classes.check_canonical(
        (label for _, label in listing.entries), listing.names, listing.names_file, listing.listings[0]
    )
    return listing


def annotation_files(dataset_dir: Path) -> list[tuple[Path, str]]:
    """The annotation files the copy's layout reads, each with the published file it must equal (by md5)."""
    return list(_reader(Path(dataset_dir))(Path(dataset_dir)).annotation_files)


def read_layout(dataset_dir: Path) -> list[IndexRow]:
    """Index rows for the Cars196 copy under ``dataset_dir`` (images not looked at)."""
    return [
        IndexRow(path, label, published_split(label, LAST_TRAIN_CLASS))
        for path, label in read_listing(dataset_dir).entries
    ]


def build_index(dataset_dir: Path) -> list[IndexRow]:
    """Index rows for Cars196 found under ``dataset_dir``; every listed image must be there."""
    rows = read_layout(dataset_dir)
    check_images_exist(DATASET, dataset_dir, [row.path for row in rows])
    return rows
