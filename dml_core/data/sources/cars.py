"""Cars196 from ``cars_annos.mat`` (struct array ``annotations``: relative_im_path, bbox_x1..y2, class 1-196,
test) over ``car_ims/``. DML split: classes 1-98 train, 99-196 test. The ``test`` flag and the devkit's
``cars_train``/``cars_test`` are the *classification* split and are never used; class ids come from the
annotation file, never from sorted folder names. Nothing else in the layout carries an image's class, so the
identity of the split rests on ``cars_annos.mat`` being the published file: ``prepare`` checks its md5 wherever
it lies, and every load checks the index against it."""

from __future__ import annotations

from functools import lru_cache
from pathlib import Path

import numpy as np
import scipy.io

from dml_core.data.index import IndexRow
from dml_core.data.sources.identity import published_split
from dml_core.data.sources.locate import (
    check_images_exist,
    find_files,
    relative_to,
    require_one,
    resolve_image_base,
)
from dml_core.errors import InputError

DATASET = "cars196"
LAST_TRAIN_CLASS = 98
EXPECTED = "cars_annos.mat next to the extracted car_ims/ folder (from car_ims.tgz)"
# Files of the classification devkit (cars_train.tgz, cars_test.tgz, devkit/cars_train_annos.mat).
CLASSIFICATION_MARKERS = ("cars_train", "cars_test", "cars_train_annos.mat", "cars_test_annos.mat")


def _refuse_classification_layout(dataset_dir: Path) -> None:
    for marker in CLASSIFICATION_MARKERS:
        found = find_files(dataset_dir, marker)
        if found:
            raise InputError(
                f"{DATASET}: found {found[0]} but no cars_annos.mat: cars_train/cars_test are the "
                f"classification split (8,144/8,041), wrong for DML; supply car_ims.tgz and "
                f"cars_annos.mat: dml prepare cars196 --root DIR --archive car_ims.tgz "
                f"--archive cars_annos.mat"
            )


def _field(record: np.void, name: str, mat_path: Path):
    try:
        return np.asarray(record[name]).squeeze()
    except (ValueError, KeyError):
        raise InputError(
            f"{DATASET}: {mat_path}: annotations: expected field {name!r}, found fields {record.dtype.names}"
        ) from None


def read_annotations(mat_path: Path) -> list[tuple[str, int]]:
    """(relative_im_path, class id) for every entry of ``annotations`` in ``cars_annos.mat``."""
    stat = Path(mat_path).stat()
    return list(_read_annotations(Path(mat_path), stat.st_size, stat.st_mtime_ns))


@lru_cache(maxsize=4)
def _read_annotations(mat_path: Path, size: int, mtime_ns: int) -> tuple[tuple[str, int], ...]:
    # Keyed by size and mtime too: parsing the real file takes about half a second, and every load checks the index
    # against it, so one process (a train and a test load) parses it once unless it changes.
    try:
        mat = scipy.io.loadmat(mat_path)
    except (ValueError, OSError, TypeError) as error:
        raise InputError(f"{DATASET}: {mat_path}: not a readable MATLAB file ({error})") from None
    if "annotations" not in mat:
        raise InputError(
            f"{DATASET}: {mat_path}: expected a variable 'annotations', found "
            f"{sorted(key for key in mat if not key.startswith('__'))}"
        )
    entries = []
    for record in np.asarray(mat["annotations"]).ravel():
        path = str(_field(record, "relative_im_path", mat_path))
        entries.append((path, int(_field(record, "class", mat_path))))
    return tuple(entries)


def read_layout(dataset_dir: Path) -> list[IndexRow]:
    """Index rows from ``cars_annos.mat`` under ``dataset_dir`` (images not looked at)."""
    if not find_files(dataset_dir, "cars_annos.mat"):
        _refuse_classification_layout(dataset_dir)
    mat_path = require_one(dataset_dir, "cars_annos.mat", DATASET, EXPECTED)
    entries = read_annotations(mat_path)
    if not entries:
        raise InputError(f"{DATASET}: {mat_path}: annotations: expected 16,185 entries, found none")
    # car_ims/ may sit next to the .mat (the original layout) or anywhere the user extracted it.
    candidates = [mat_path.parent, dataset_dir] + [path.parent for path in find_files(dataset_dir, "car_ims")]
    base = resolve_image_base(candidates, entries[0][0], DATASET, mat_path, dataset_dir)
    in_index = relative_to(base, dataset_dir)
    return [IndexRow(in_index(path), label, published_split(label, LAST_TRAIN_CLASS)) for path, label in entries]


def build_index(dataset_dir: Path) -> list[IndexRow]:
    """Index rows for Cars196 found under ``dataset_dir``; every listed image must be there."""
    rows = read_layout(dataset_dir)
    check_images_exist(DATASET, dataset_dir, [row.path for row in rows])
    return rows
