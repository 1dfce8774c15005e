"""In-Shop Clothes Retrieval (DeepFashion) from ``list_eval_partition.txt`` (image count, header, then
``image_name item_id evaluation_status`` with status train/query/gallery). Labels are the item ids' numbers
(``id_00000002`` -> 2). Image paths (``img/...``) are relative to the folder that holds ``img/``. Each image lies
in its item's folder (``img/WOMEN/Dresses/id_00000002/02_1_front.jpg``): an item id that disagrees with the
folder is refused."""

from __future__ import annotations

from pathlib import Path

from dml_core.data.index import IndexRow
from dml_core.data.sources.identity import check_path_classes, number_in_folder
from dml_core.data.sources.locate import (
    check_images_exist,
    find_files,
    read_table,
    relative_to,
    require_one,
    resolve_image_base,
)
from dml_core.errors import InputError

DATASET = "inshop"
SPLITS = ("train", "query", "gallery")
ITEM_FOLDER = r"id_(\d+)"
EXPECTED = (
    "Eval/list_eval_partition.txt and the img/ folder extracted from Img/img.zip (In-shop Clothes "
    "Retrieval Benchmark, a manual download)"
)


def item_label(item_id: str, listing: Path) -> int:
    """``id_00000002`` -> 2.

    >>> item_label("id_00000002", Path("list_eval_partition.txt"))
    2
    """
    prefix, _, number = item_id.partition("_")
    if prefix != "id" or not number.isdigit():
        raise InputError(f"{DATASET}: {listing}: item_id: expected 'id_<digits>', found {item_id!r}")
    return int(number)


def item_of_path(path: str) -> int | None:
    """The item id an image's folder carries.

    >>> item_of_path("img/WOMEN/Dresses/id_00000002/02_1_front.jpg")
    2
    """
    return number_in_folder(path, ITEM_FOLDER)


def read_layout(dataset_dir: Path) -> list[IndexRow]:
    """Index rows from ``list_eval_partition.txt`` under ``dataset_dir``, identity-checked (images not looked at)."""
    listing = require_one(dataset_dir, "list_eval_partition.txt", DATASET, EXPECTED)
    entries = read_table(listing, DATASET, 3, skip=2)
    if not entries:
        raise InputError(f"{DATASET}: {listing}: expected 52,712 entries after the two header lines, found none")
    for line_number, (_path, _item, status) in enumerate(entries, start=3):
        if status not in SPLITS:
            raise InputError(
                f"{DATASET}: {listing}: line {line_number}: evaluation_status: expected one of "
                f"{'/'.join(SPLITS)}, found {status!r}"
            )
    candidates = [listing.parent, listing.parent.parent, dataset_dir]
    candidates += [path.parent for path in find_files(dataset_dir, "img") if path.is_dir()]
    base = resolve_image_base(candidates, entries[0][0], DATASET, listing, dataset_dir)
    in_index = relative_to(base, dataset_dir)
    rows = [IndexRow(in_index(path), item_label(item, listing), status) for path, item, status in entries]
    check_path_classes(DATASET, rows, listing, item_of_path, "item folder", "id_00000002", what="item_id")
    return rows


def build_index(dataset_dir: Path) -> list[IndexRow]:
    """Index rows for In-Shop found under ``dataset_dir``; every listed image must be there."""
    rows = read_layout(dataset_dir)
    check_images_exist(DATASET, dataset_dir, [row.path for row in rows])
    return rows
