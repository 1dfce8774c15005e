"""Identity checks on index rows: the class id a row carries must be the one the dataset's own layout gives its
image, and its split must be the published DML split of that class.

Counting images per split cannot see two equal-sized classes whose ids were swapped (one train, one test); these
checks can, wherever the layout says which class an image is: CUB's class folders (``001.Black_footed_Albatross``),
In-Shop's item folders (``id_00000002``), the embedded set's code-point folders, and the published class-id ranges
of the DML splits (CUB 1-100 train, Cars 1-98, SOP 1-11,318). Each failure is one line naming the file, the image
or class, what was expected and what was found.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterable
from pathlib import Path, PurePosixPath

from dml_core.data.index import IndexRow
from dml_core.errors import InputError


def number_in_folder(path: str, pattern: str) -> int | None:
    """The number an image's folder carries (``pattern``'s one group), or None if the folder does not match.

    >>> number_in_folder("CUB_200_2011/images/030.Fish_Crow/Fish_Crow_0001_1.jpg", r"(\\d+)\\..+")
    30
    >>> number_in_folder("img/WOMEN/Dresses/id_00000002/02_1_front.jpg", r"id_(\\d+)")
    2
    >>> number_in_folder("car_ims/000001.jpg", r"id_(\\d+)") is None
    True
    """
    match = re.fullmatch(pattern, PurePosixPath(path).parent.name)
    return int(match.group(1)) if match else None


def check_path_classes(
    dataset: str,
    rows: Iterable[IndexRow],
    source: Path,
    class_of_path: Callable[[str], int | None],
    carrier: str,
    example: str,
    what: str = "class id",
) -> None:
    """Every row's label must be the id its folder (the ``carrier``, named like ``example``) carries."""
    for row in rows:
        carried = class_of_path(row.path)
        if carried is None:
            raise InputError(
                f"{dataset}: {source}: {row.path}: expected the image in a {carrier} carrying its id (like "
                f"{example}), found {PurePosixPath(row.path).parent.name!r}"
            )
        if carried != row.label:
            raise InputError(
                f"{dataset}: {source}: {row.path}: {what}: expected {carried} (its {carrier} says so), "
                f"found {row.label}; the annotation does not belong to this image (ids swapped or edited)"
            )


def published_split(label: int, last_train_class: int) -> str:
    """The DML split of a class id when the published split is by id: ids up to ``last_train_class`` train.

    >>> published_split(100, 100), published_split(101, 100)
    ('train', 'test')
    """
    return "train" if label <= last_train_class else "test"


def check_published_split(dataset: str, rows: Iterable[IndexRow], source: Path, last_train_class: int) -> None:
    """Every row's split must be the published DML split of its class id."""
    for row in rows:
        expected = published_split(row.label, last_train_class)
        if row.split != expected:
            raise InputError(
                f"{dataset}: {source}: class {row.label}: split: expected {expected} (the published DML split has "
                f"class ids 1-{last_train_class:,} in train, the rest in test), found {row.split} ({row.path})"
            )
