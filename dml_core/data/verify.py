"""The checks every load and every ``prepare`` runs: exact image and class counts per split, and
class-disjoint train/test. A mismatch names the dataset, the split, the expected and found counts and the
folder searched."""

from __future__ import annotations

from collections.abc import Iterable
from pathlib import Path

from dml_core.data.index import IndexRow
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
            f"prepare it again with `dml prepare {spec.name} --root {Path(dataset_dir).parent}`"
        )
