"""The canonical index file ``<root>/<dataset>/dml_index.csv`` and the split it yields.

One row per image: ``path,label,split``. ``path`` is relative to the dataset folder, ``label`` is the
dataset's own class id (an int), ``split`` is ``train``/``test`` (In-Shop: ``train``/``query``/``gallery``).
``dml prepare`` writes it once the data is verified; :func:`dml_core.data.loading.load_split` reads it and
re-checks it every time. :func:`index_hashes` identifies the images of each split (for results files).
"""

from __future__ import annotations

import csv
import hashlib
import io
from collections import defaultdict
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from dml_core.atomic_io import atomic_write_text
from dml_core.command_line import DML
from dml_core.errors import InputError

INDEX_FILENAME = "dml_index.csv"
INDEX_COLUMNS = ("path", "label", "split")


@dataclass(frozen=True)
class IndexRow:
    """One image of a dataset: where it is (relative to the dataset folder), its class id and its split."""

    path: str
    label: int
    split: str


@dataclass(frozen=True, eq=False)
class SplitIndex:
    """The images of one split: paths relative to ``root`` (the dataset folder) and their int class ids."""

    dataset: str
    split: str
    root: Path
    relative_paths: tuple[str, ...]
    labels: np.ndarray

    def __len__(self) -> int:
        return len(self.relative_paths)

    @property
    def paths(self) -> list[Path]:
        """Absolute paths, in index order."""
        return [self.root / relative for relative in self.relative_paths]

    @property
    def num_classes(self) -> int:
        return len(np.unique(self.labels))

    def dense_labels(self) -> np.ndarray:
        """Labels renumbered 0..C-1 in increasing class-id order (for losses with one proxy per class).

        >>> SplitIndex("x", "train", Path("."), ("a", "b", "c"), np.array([7, 3, 7])).dense_labels().tolist()
        [1, 0, 1]
        """
        return np.unique(self.labels, return_inverse=True)[1].astype(np.int64)


def index_path(dataset_dir: Path) -> Path:
    return Path(dataset_dir) / INDEX_FILENAME


def write_index(dataset_dir: Path, rows: Iterable[IndexRow]) -> Path:
    """Write the index atomically (a killed ``prepare`` never leaves a half index that loads)."""
    buffer = io.StringIO()
    writer = csv.writer(buffer, lineterminator="\n")
    writer.writerow(INDEX_COLUMNS)
    for row in rows:
        writer.writerow((row.path, row.label, row.split))
    return atomic_write_text(index_path(dataset_dir), buffer.getvalue())


def read_index(dataset_dir: Path) -> list[IndexRow]:
    """Read ``dml_index.csv``; a missing file or a malformed row is an :class:`InputError` naming it."""
    path = index_path(dataset_dir)
    if not path.is_file():
        raise InputError(
            f"{path}: index not found; run `{DML} prepare {Path(dataset_dir).name} --root "
            f"{Path(dataset_dir).parent}` first"
        )
    with path.open(newline="", encoding="utf-8") as handle:
        reader = csv.reader(handle)
        header = tuple(next(reader, ()))
        if header[: len(INDEX_COLUMNS)] != INDEX_COLUMNS:
            raise InputError(f"{path}: header: expected columns {','.join(INDEX_COLUMNS)}, found {','.join(header)}")
        rows = []
        for line_number, fields in enumerate(reader, start=2):
            try:
                rows.append(IndexRow(fields[0], int(fields[1]), fields[2]))
            except (IndexError, ValueError):
                raise InputError(
                    f"{path}: line {line_number}: expected 'path,label,split' with an int label, found {fields}"
                ) from None
    return rows


def split_index(dataset: str, dataset_dir: Path, rows: list[IndexRow], split: str) -> SplitIndex:
    """The rows of one split as a :class:`SplitIndex` (no count check: see ``verify.verify_rows``)."""
    chosen = [row for row in rows if row.split == split]
    return SplitIndex(
        dataset=dataset,
        split=split,
        root=Path(dataset_dir),
        relative_paths=tuple(row.path for row in chosen),
        labels=np.array([row.label for row in chosen], dtype=np.int64),
    )


def split_paths_sha256(relative_paths: Iterable[str]) -> str:
    """sha256 of one split's image paths: sorted, UTF-8, one per line, each line ending in a newline.

    >>> split_paths_sha256(["c.jpg"])[:16]
    '500268144e623b96'
    """
    text = "".join(f"{path}\n" for path in sorted(relative_paths))
    return hashlib.sha256(text.encode("utf-8")).hexdigest()


def index_hashes(rows: Iterable[IndexRow]) -> dict[str, str]:
    """Which images an index puts in each split: one :func:`split_paths_sha256` per split, and ``"all"``, the
    sha256 of the lines ``<split>:<hash>`` in split-name order. Labels are not hashed: every load ties them to
    the paths (the identity checks), so the paths identify the data a run trained and tested on.

    >>> rows = [IndexRow("b.jpg", 1, "train"), IndexRow("a.jpg", 1, "train"), IndexRow("c.jpg", 2, "test")]
    >>> hashes = index_hashes(rows)
    >>> sorted(hashes), hashes["train"] == split_paths_sha256(["a.jpg", "b.jpg"]), hashes["all"][:16]
    (['all', 'test', 'train'], True, 'a93b54e8f5ff90af')
    """
    paths_by_split: dict[str, list[str]] = defaultdict(list)
    for row in rows:
        paths_by_split[row.split].append(row.path)
    hashes = {split: split_paths_sha256(paths) for split, paths in sorted(paths_by_split.items())}
    overall = "".join(f"{split}:{digest}\n" for split, digest in hashes.items())
    return {**hashes, "all": hashlib.sha256(overall.encode("utf-8")).hexdigest()}


def dataset_index_hashes(dataset_dir: Path) -> dict[str, str]:
    """:func:`index_hashes` of the index prepared in ``dataset_dir`` (``<root>/<dataset>``)."""
    return index_hashes(read_index(dataset_dir))
