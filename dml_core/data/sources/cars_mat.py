"""Cars196's MATLAB annotation files, as the two Stanford layouts ship them.

- original: ``cars_annos.mat``: struct array ``annotations`` (relative_im_path ``car_ims/000001.jpg``, bbox_x1..y2,
  class 1-196, test) and cell ``class_names``, over ``car_ims/``;
- devkit: ``devkit/cars_train_annos.mat`` and ``cars_test_annos_withlabels.mat`` (the test half's labels,
  published apart): struct arrays ``annotations`` (bbox_x1..y2, class, fname ``00001.jpg``) over ``cars_train/``
  and ``cars_test/``; ``devkit/cars_meta.mat``: cell ``class_names``. (``devkit/cars_test_annos.mat`` has no
  classes and is not read.)
"""

from __future__ import annotations

from functools import lru_cache
from pathlib import Path

import numpy as np

from dml_core.command_line import DML
from dml_core.data.sources.cars_listing import CarsListing
from dml_core.data.sources.locate import find_files, relative_to, require_one, resolve_image_base
from dml_core.errors import InputError

DATASET = "cars196"
ORIGINAL_EXPECTED = "cars_annos.mat next to the extracted car_ims/ folder (from car_ims.tgz)"
DEVKIT_EXPECTED = (
    "the devkit layout: cars_train/, cars_test/, devkit/cars_train_annos.mat, devkit/cars_meta.mat and "
    "cars_test_annos_withlabels.mat"
)
# The test labels are published apart from the devkit; copies passed around keep a browser's " (1)" suffix.
TEST_LABEL_NAMES = ("cars_test_annos_withlabels.mat", "cars_test_annos_withlabels (1).mat")


def _loadmat(mat_path: Path) -> dict:
    stat = Path(mat_path).stat()
    return _loadmat_cached(Path(mat_path), stat.st_size, stat.st_mtime_ns)


@lru_cache(maxsize=8)
def _loadmat_cached(mat_path: Path, size: int, mtime_ns: int) -> dict:
    # Keyed by size and mtime too: every load checks the index against these files, so one process parses a file
    # once unless it changes.
    import scipy.io  # where a devkit file is read: planning and training on other data do not load it

    try:
        return scipy.io.loadmat(mat_path)
    except (ValueError, OSError, TypeError) as error:
        raise InputError(f"{DATASET}: {mat_path}: not a readable MATLAB file ({error})") from None


def _variable(mat_path: Path, name: str):
    mat = _loadmat(mat_path)
    if name not in mat:
        raise InputError(
            f"{DATASET}: {mat_path}: expected a variable {name!r}, found "
            f"{sorted(key for key in mat if not key.startswith('__'))}"
        )
    return np.asarray(mat[name]).ravel()


def _field(record: np.void, name: str, mat_path: Path):
    try:
        return np.asarray(record[name]).squeeze()
    except (ValueError, KeyError, IndexError):
        raise InputError(
            f"{DATASET}: {mat_path}: annotations: expected field {name!r}, found fields {record.dtype.names}"
        ) from None


def read_annotations(mat_path: Path, path_field: str = "relative_im_path") -> list[tuple[str, int]]:
    """(image path, class id) for every entry of ``annotations``; the path is ``relative_im_path``
    (``cars_annos.mat``) or ``fname`` (the devkit's files)."""
    entries = []
    for record in _variable(mat_path, "annotations"):
        entries.append((str(_field(record, path_field, mat_path)), int(_field(record, "class", mat_path))))
    return entries


def read_class_names(mat_path: Path) -> tuple[str, ...]:
    """The cell ``class_names`` (``cars_meta.mat``, ``cars_annos.mat``), in class-id order."""
    return tuple(str(np.asarray(name).squeeze()) for name in _variable(mat_path, "class_names"))


def read_original(dataset_dir: Path) -> CarsListing:
    """The original layout: ``cars_annos.mat`` over ``car_ims/``."""
    mat_path = require_one(dataset_dir, "cars_annos.mat", DATASET, ORIGINAL_EXPECTED)
    entries = read_annotations(mat_path)
    if not entries:
        raise InputError(f"{DATASET}: {mat_path}: annotations: expected 16,185 entries, found none")
    # car_ims/ may sit next to the .mat (the original layout) or anywhere the user extracted it.
    candidates = [mat_path.parent, dataset_dir] + [path.parent for path in find_files(dataset_dir, "car_ims")]
    base = resolve_image_base(candidates, entries[0][0], DATASET, mat_path, dataset_dir)
    in_index = relative_to(base, dataset_dir)
    return CarsListing(
        layout="original",
        entries=[(in_index(path), label) for path, label in entries],
        names=read_class_names(mat_path),
        names_file=mat_path,
        listings=(mat_path,),
        annotation_files=((mat_path, "cars_annos.mat"),),
    )


def _test_labels(dataset_dir: Path) -> Path:
    for name in TEST_LABEL_NAMES:
        found = [path for path in find_files(dataset_dir, name) if path.is_file()]
        if found:
            return require_one(dataset_dir, name, DATASET, DEVKIT_EXPECTED)
    raise InputError(
        f"{DATASET}: cars_test_annos_withlabels.mat not found under {dataset_dir}: the devkit's "
        f"cars_test_annos.mat carries no classes, and the test half's labels are published apart; expected "
        f"{DEVKIT_EXPECTED} (`{DML} prepare cars196` lists where to get it)"
    )


def _half(dataset_dir: Path, mat_path: Path, folder: str) -> list[tuple[str, int]]:
    entries = read_annotations(mat_path, path_field="fname")
    if not entries:
        raise InputError(f"{DATASET}: {mat_path}: annotations: expected entries, found none")
    # Copies nest the image folder differently (cars_train/ or cars_train/cars_train/).
    candidates = [path for path in find_files(dataset_dir, folder) if path.is_dir()]
    base = resolve_image_base(candidates, entries[0][0], DATASET, mat_path, dataset_dir)
    in_index = relative_to(base, dataset_dir)
    return [(in_index(path), label) for path, label in entries]


def read_devkit(dataset_dir: Path) -> CarsListing:
    """The devkit layout: the two classification halves with their annotation files, and the class names."""
    train_mat = require_one(dataset_dir, "cars_train_annos.mat", DATASET, DEVKIT_EXPECTED)
    test_mat = _test_labels(dataset_dir)
    meta = require_one(dataset_dir, "cars_meta.mat", DATASET, DEVKIT_EXPECTED)
    return CarsListing(
        layout="devkit",
        entries=_half(dataset_dir, train_mat, "cars_train") + _half(dataset_dir, test_mat, "cars_test"),
        names=read_class_names(meta),
        names_file=meta,
        listings=(train_mat, test_mat),
        annotation_files=(
            (train_mat, "cars_train_annos.mat"),
            (test_mat, "cars_test_annos_withlabels.mat"),
            (meta, "cars_meta.mat"),
        ),
    )
