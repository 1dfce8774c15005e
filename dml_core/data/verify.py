"""The checks every load and every ``prepare`` runs: exact image and class counts per split, and
class-disjoint train/test. A mismatch names the dataset, the split, the expected and found counts and the
folder searched. Every load also checks each index row against the dataset's own annotation files
(:func:`verify_against_layout`), so an index edited or left over from other data cannot slip through with the
right counts (two equal-sized classes swapped between train and test)."""

from __future__ import annotations

from collections.abc import Iterable
from pathlib import Path

from dml_core.command_line import DML
from dml_core.data.index import IndexRow, index_path
from dml_core.data.registry import DatasetSpec
from dml_core.errors import InputError


def _classes(rows: Iterable[IndexRow], splits: Iterable[str]) -> set[int]:
    wanted = set(splits)
    return {row.label for row in rows if row.split in wanted}


def verify_rows(spec: DatasetSpec, rows: list[IndexRow], dataset_dir: Path) -> None:
    """Raise :class:`InputError` unless ``rows`` are exactly the dataset's DML split."""
    found_splits = sorted({row.split for row in rows} - spec.splits.keys())
    if found_splits:
        raise InputError(
            f"{spec.name}: {dataset_dir}: split: expected {'/'.join(spec.splits)}, found also {found_splits}"
        )
    problems = []
    for split, expected in spec.splits.items():
        images = sum(1 for row in rows if row.split == split)
        classes = len(_classes(rows, [split]))
        if images != expected.images or (expected.classes is not None and classes != expected.classes):
            wanted = f"{expected.images:,} images" + (
                f" in {expected.classes:,} classes" if expected.classes is not None else ""
            )
            hint = f" ({spec.wrong_split_hints[images]}, wrong for DML)" if images in spec.wrong_split_hints else ""
            problems.append(f"split {split!r}: expected {wanted}, found {images:,} images in {classes:,} classes{hint}")
    for splits, expected_classes in spec.joint_classes.items():
        found = len(_classes(rows, splits))
        if found != expected_classes:
            problems.append(f"splits {'+'.join(splits)}: expected {expected_classes:,} classes, found {found:,}")
    train = _classes(rows, ["train"])
    shared = train & _classes(rows, [split for split in spec.splits if split != "train"])
    if shared:
        problems.append(
            f"train and evaluation splits share {len(shared)} classes (e.g. {sorted(shared)[:5]}); "
            f"DML splits are class-disjoint"
        )
    if problems:
        raise InputError(
            f"{spec.name} ({spec.title}): {'; '.join(problems)} (root searched: {dataset_dir}); "
            f"prepare it again with `{DML} prepare {spec.name} --root {Path(dataset_dir).parent}`"
        )


def verify_against_layout(spec: DatasetSpec, rows: list[IndexRow], dataset_dir: Path) -> None:
    """Raise :class:`InputError` naming the index file, the line, the image and its expected and found class and
    split unless ``rows`` (the index) are exactly what the dataset's annotation files say."""
    index_file = index_path(dataset_dir)
    again = f"prepare it again with `{DML} prepare {spec.name} --root {Path(dataset_dir).parent}`"
    layout = {row.path: row for row in spec.read_layout(Path(dataset_dir))}
    seen: set[str] = set()
    for line_number, row in enumerate(rows, start=2):  # line 1 is the header
        where = f"{spec.name}: {index_file}: line {line_number}: {row.path}"
        if row.path in seen:
            raise InputError(f"{where}: expected each image once, found it again; {again}")
        seen.add(row.path)
        truth = layout.get(row.path)
        if truth is None:
            raise InputError(f"{where}: not an image of the dataset's annotation files; {again}")
        if (truth.label, truth.split) != (row.label, row.split):
            raise InputError(
                f"{where}: expected class {truth.label} in {truth.split} (as the dataset's annotation files say), "
                f"found class {row.label} in {row.split}; the index was edited or belongs to other data: {again}"
            )
    if len(seen) != len(layout):
        raise InputError(
            f"{spec.name}: {index_file}: lists {len(seen):,} images, the dataset's annotation files "
            f"{len(layout):,}; {again}"
        )
