"""Cars196 as Kaggle's class-folder copy (jutrera/stanford-car-dataset-by-classes-folder): ``names.csv`` (the 196
names in class-id order, one a line, no header), ``anno_train.csv`` and ``anno_test.csv`` (no header:
``fname,x1,y1,x2,y2,class``, the devkit's annotations) over ``car_data/car_data/{train,test}/<class name>/<fname>``.

Classes come from the csv files; the folders only check them: each image must lie in the folder of its annotated
class. A folder is its class's name with ``/`` written ``-`` (``Ram C/V Cargo Van Minivan 2012`` lies in
``Ram C-V Cargo Van Minivan 2012/``)."""

from __future__ import annotations

import csv
import os
from pathlib import Path

from dml_core.data.sources.cars_listing import CarsListing
from dml_core.data.sources.locate import MAX_LISTED, find_files, relative_to, require_one
from dml_core.errors import InputError

DATASET = "cars196"
EXPECTED = (
    "Kaggle's class-folder layout: names.csv, anno_train.csv, anno_test.csv and car_data/car_data/{train,test}/"
    "<class name>/ (stanford-car-dataset-by-classes-folder.zip)"
)
SPLIT_FILES = {"train": "anno_train.csv", "test": "anno_test.csv"}
ANNOTATION_COLUMNS = "fname,x1,y1,x2,y2,class"


def folder_of(class_name: str) -> str:
    """The folder a class's images lie in.

    >>> folder_of("Ram C/V Cargo Van Minivan 2012")
    'Ram C-V Cargo Van Minivan 2012'
    """
    return class_name.replace("/", "-")


def _rows(path: Path) -> list[tuple[int, list[str]]]:
    lines = path.read_text(encoding="utf-8-sig").splitlines()
    return [(number, row) for number, row in enumerate(csv.reader(lines), start=1) if row]


def read_names(path: Path) -> tuple[str, ...]:
    """``names.csv``: one class name a line."""
    names = []
    for number, row in _rows(path):
        if len(row) != 1:
            raise InputError(f"{DATASET}: {path}: line {number}: expected one class name, found {row}")
        names.append(row[0].strip())
    return tuple(names)


def read_annotations(path: Path, classes: int) -> list[tuple[int, str, int]]:
    """(line number, fname, class id) of each row of ``anno_train.csv`` / ``anno_test.csv``."""
    entries = []
    for number, row in _rows(path):
        label = row[-1].strip()
        if len(row) != 6 or not label.isdigit() or not 1 <= int(label) <= classes:
            raise InputError(
                f"{DATASET}: {path}: line {number}: expected '{ANNOTATION_COLUMNS}' (no header) with a class "
                f"1-{classes}, found {','.join(row)!r}"
            )
        entries.append((number, row[0].strip(), int(label)))
    return entries


def _image_folder(dataset_dir: Path, split: str) -> Path:
    """``car_data/car_data/<split>``: the one folder of that name that holds class folders beside its sibling."""
    other = "test" if split == "train" else "train"
    found = [
        path
        for path in find_files(dataset_dir, split)
        if path.is_dir() and (path.parent / other).is_dir() and path.parent.name == "car_data"
    ]
    if len(found) != 1:
        listed = ", ".join(str(path) for path in found[:MAX_LISTED]) or "none"
        raise InputError(
            f"{DATASET}: {split}/ image folder: expected one car_data/car_data/{split}/ under {dataset_dir} "
            f"({EXPECTED}), found {listed}"
        )
    return found[0]


def _folders_by_file(split_dir: Path) -> dict[str, str]:
    """Each image file name in ``split_dir``'s class folders -> the folder it lies in."""
    where: dict[str, str] = {}
    for folder in sorted(os.scandir(split_dir), key=lambda entry: entry.name):
        if not folder.is_dir():
            continue
        for image in os.scandir(folder.path):
            if image.name in where:
                raise InputError(
                    f"{DATASET}: {split_dir}: {image.name}: expected in one class folder, found in "
                    f"{where[image.name]!r} and {folder.name!r}"
                )
            where[image.name] = folder.name
    return where


def read_class_folders(dataset_dir: Path) -> CarsListing:
    """The class-folder layout, each image checked to lie in its annotated class's folder."""
    names_csv = require_one(dataset_dir, "names.csv", DATASET, EXPECTED)
    names = read_names(names_csv)
    class_of_folder = {folder_of(name): class_id for class_id, name in enumerate(names, start=1)}
    entries, listings = [], []
    for split, filename in SPLIT_FILES.items():
        listing = require_one(dataset_dir, filename, DATASET, EXPECTED)
        listings.append(listing)
        split_dir = _image_folder(dataset_dir, split)
        where = _folders_by_file(split_dir)
        in_index = relative_to(split_dir, dataset_dir)
        for number, fname, label in read_annotations(listing, len(names)):
            expected_folder = folder_of(names[label - 1])
            folder = where.get(fname, expected_folder)  # an image not there at all: the missing-images check
            if folder != expected_folder:
                carried = class_of_folder.get(folder)
                raise InputError(
                    f"{DATASET}: {listing}: line {number}: {fname}: class: expected "
                    f"{carried if carried is not None else 'none'} (its class folder {folder!r} says so), "
                    f"found {label}; the annotation does not belong to this image (ids swapped or edited)"
                )
            entries.append((in_index(f"{folder}/{fname}"), label))
    return CarsListing(layout="kaggle", entries=entries, names=names, names_file=names_csv, listings=tuple(listings))
