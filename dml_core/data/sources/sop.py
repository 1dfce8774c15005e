"""Stanford Online Products from ``Ebay_train.txt`` and ``Ebay_test.txt`` (header, then
``image_id class_id super_class_id path``). The official files *are* the DML split (11,318 / 11,316 classes);
never re-cut by class id, which gives 11,317 / 11,317."""

from __future__ import annotations

from pathlib import Path

from dml_core.data.index import IndexRow
from dml_core.data.sources.locate import check_images_exist, read_table, relative_to, require_one

DATASET = "sop"
EXPECTED = (
    "the extracted Stanford_Online_Products folder (from Stanford_Online_Products.zip) with Ebay_train.txt "
    "and Ebay_test.txt"
)
SPLIT_FILES = {"train": "Ebay_train.txt", "test": "Ebay_test.txt"}


def build_index(dataset_dir: Path) -> list[IndexRow]:
    """Index rows for SOP found under ``dataset_dir``."""
    rows = []
    for split, filename in SPLIT_FILES.items():
        listing = require_one(dataset_dir, filename, DATASET, EXPECTED)
        for _image_id, class_id, _super_class, path in read_table(listing, DATASET, 4, skip=1):
            rows.append(IndexRow(relative_to(listing.parent / path, dataset_dir), int(class_id), split))
    check_images_exist(DATASET, dataset_dir, [row.path for row in rows])
    return rows
