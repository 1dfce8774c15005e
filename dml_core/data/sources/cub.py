"""CUB-200-2011 from its own files: ``images.txt`` (id, path under ``images/``) and ``image_class_labels.txt``
(id, class 1-200). DML split: classes 1-100 train, 101-200 test. ``train_test_split.txt`` is the
*classification* split and is deliberately never read. Each image's class folder (``001.Black_footed_Albatross``)
carries its class id: a label that disagrees with it is refused."""

from __future__ import annotations

from pathlib import Path

from dml_core.data.index import IndexRow
from dml_core.data.sources.identity import check_path_classes, number_in_folder, published_split
from dml_core.data.sources.locate import (
    check_images_exist,
    find_files,
    read_table,
    relative_to,
    require_one,
)
from dml_core.errors import InputError

DATASET = "cub200"
LAST_TRAIN_CLASS = 100
CLASS_FOLDER = r"(\d+)\..+"  # 001.Black_footed_Albatross
EXPECTED = "the extracted CUB_200_2011 folder (from CUB_200_2011.tgz) with images.txt and image_class_labels.txt"


def _refuse_classification_layout(dataset_dir: Path) -> None:
    # Mirrors that ship CUB as train/ and test/ class folders carry the classification split (5,994/5,794).
    train_dirs = [path for path in find_files(dataset_dir, "train") if path.is_dir()]
    test_dirs = [path for path in find_files(dataset_dir, "test") if path.is_dir()]
    if train_dirs and test_dirs:
        raise InputError(
            f"{DATASET}: found {train_dirs[0]} and {test_dirs[0]} but no images.txt: this looks like "
            f"CUB's classification split, which is wrong for DML; supply {EXPECTED}"
        )


def class_of_path(path: str) -> int | None:
    """The class id an image's folder carries.

    >>> class_of_path("CUB_200_2011/images/130.Tree_Sparrow/Tree_Sparrow_0001_1.jpg")
    130
    """
    return number_in_folder(path, CLASS_FOLDER)


def read_layout(dataset_dir: Path) -> list[IndexRow]:
    """Index rows from CUB's annotation files under ``dataset_dir``, identity-checked (images not looked at)."""
    if not find_files(dataset_dir, "images.txt"):
        _refuse_classification_layout(dataset_dir)
    images_txt = require_one(dataset_dir, "images.txt", DATASET, EXPECTED)
    labels_txt = require_one(dataset_dir, "image_class_labels.txt", DATASET, EXPECTED)
    paths = {image_id: path for image_id, path in read_table(images_txt, DATASET, 2)}
    labels = {image_id: label for image_id, label in read_table(labels_txt, DATASET, 2)}
    if paths.keys() != labels.keys():
        only = sorted(paths.keys() ^ labels.keys())[:5]
        raise InputError(
            f"{DATASET}: {images_txt} and {labels_txt} list different image ids (e.g. {only}); "
            f"both must come from the same CUB_200_2011 release"
        )
    in_index = relative_to(images_txt.parent / "images", dataset_dir)
    rows = []
    for image_id, path in paths.items():
        try:
            label = int(labels[image_id])
        except ValueError:
            raise InputError(
                f"{DATASET}: {labels_txt}: image {image_id}: expected an int class id, found {labels[image_id]!r}"
            ) from None
        rows.append(IndexRow(in_index(path), label, published_split(label, LAST_TRAIN_CLASS)))
    check_path_classes(DATASET, rows, labels_txt, class_of_path, "class folder", "001.Black_footed_Albatross")
    return rows


def build_index(dataset_dir: Path) -> list[IndexRow]:
    """Index rows for CUB-200-2011 found under ``dataset_dir``; every listed image must be there."""
    rows = read_layout(dataset_dir)
    check_images_exist(DATASET, dataset_dir, [row.path for row in rows])
    return rows
