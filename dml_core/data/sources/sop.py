"""Stanford Online Products from ``Ebay_train.txt`` and ``Ebay_test.txt`` (header, then
``image_id class_id super_class_id path``). The official files *are* the DML split (11,318 / 11,316 classes);
never re-cut by class id, which gives 11,317 / 11,317.

Identity: the official files number the classes 1-11,318 (train) and 11,319-22,634 (test), so a class id in the
wrong file is refused; each class lies in one super-class folder (``bicycle_final``), and each folder has one
``super_class_id``."""

from __future__ import annotations

from pathlib import Path

from dml_core.data.index import IndexRow
from dml_core.data.sources.identity import check_published_split
from dml_core.data.sources.locate import check_images_exist, read_table, relative_to, require_one
from dml_core.errors import InputError

DATASET = "sop"
LAST_TRAIN_CLASS = 11318
EXPECTED = (
    "the extracted Stanford_Online_Products folder (from Stanford_Online_Products.zip) with Ebay_train.txt "
    "and Ebay_test.txt"
)
SPLIT_FILES = {"train": "Ebay_train.txt", "test": "Ebay_test.txt"}


class _SuperClasses:
    """Which super-class folder each class and each ``super_class_id`` belong to, as the listings go."""

    def __init__(self) -> None:
        self.folder_of_super: dict[int, str] = {}
        self.super_of_folder: dict[str, int] = {}
        self.folder_of_class: dict[int, str] = {}

    def add(self, listing: Path, line_number: int, class_id: int, super_class: int, path: str) -> None:
        folder = path.split("/", 1)[0]
        where = f"{DATASET}: {listing}: line {line_number}"
        known_folder = self.folder_of_super.setdefault(super_class, folder)
        if known_folder != folder:
            raise InputError(
                f"{where}: super_class_id {super_class}: expected folder {known_folder}/ (as its earlier images), "
                f"found {path}"
            )
        known_super = self.super_of_folder.setdefault(folder, super_class)
        if known_super != super_class:
            raise InputError(
                f"{where}: {path}: super_class_id: expected {known_super} (its folder's), found {super_class}"
            )
        class_folder = self.folder_of_class.setdefault(class_id, folder)
        if class_folder != folder:
            raise InputError(
                f"{where}: class {class_id}: expected its images in one super-class folder ({class_folder}/), "
                f"found {path}"
            )


def read_layout(dataset_dir: Path) -> list[IndexRow]:
    """Index rows from the two official listings under ``dataset_dir``, identity-checked (images not looked at)."""
    rows = []
    super_classes = _SuperClasses()
    for split, filename in SPLIT_FILES.items():
        listing = require_one(dataset_dir, filename, DATASET, EXPECTED)
        listed = []
        in_index = relative_to(listing.parent, dataset_dir)
        for line_number, (_image_id, class_id, super_class, path) in enumerate(
            read_table(listing, DATASET, 4, skip=1), start=2
        ):
            try:
                label, super_id = int(class_id), int(super_class)
            except ValueError:
                raise InputError(
                    f"{DATASET}: {listing}: line {line_number}: expected int class_id and super_class_id, "
                    f"found {class_id!r} {super_class!r}"
                ) from None
            super_classes.add(listing, line_number, label, super_id, path)
            listed.append(IndexRow(in_index(path), label, split))
        check_published_split(DATASET, listed, listing, LAST_TRAIN_CLASS)
        rows.extend(listed)
    return rows


def build_index(dataset_dir: Path) -> list[IndexRow]:
    """Index rows for SOP found under ``dataset_dir``; every listed image must be there."""
    rows = read_layout(dataset_dir)
    check_images_exist(DATASET, dataset_dir, [row.path for row in rows])
    return rows
