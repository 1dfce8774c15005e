"""Cars196's canonical classes: the 196 names and each class's image count (``cars196_classes.csv`` beside this
module, derived from the published devkit and test labels). Every copy, whatever its layout, must match them: a
copy with another name or another count for a class is not the published dataset."""

from __future__ import annotations

import csv
from collections import Counter
from collections.abc import Iterable
from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path

from dml_core.errors import InputError

DATASET = "cars196"
CLASSES_FILE = Path(__file__).with_name("cars196_classes.csv")


@dataclass(frozen=True)
class CanonicalClasses:
    """Names in class-id order (id 1 first) and the image count of each class id."""

    names: tuple[str, ...]
    images: dict[int, int]


@lru_cache(maxsize=1)
def canonical_classes() -> CanonicalClasses:
    """The published classes, read once from ``cars196_classes.csv``."""
    lines = [line for line in CLASSES_FILE.read_text(encoding="utf-8").splitlines() if not line.startswith("#")]
    rows = list(csv.DictReader(lines))
    return CanonicalClasses(
        names=tuple(row["name"] for row in rows), images={int(row["class_id"]): int(row["images"]) for row in rows}
    )


def check_canonical(labels: Iterable[int], names: tuple[str, ...], names_file: Path, listing: Path) -> None:
    """Refuse a copy whose class names (from ``names_file``) or per-class image counts (``labels`` of every image,
    from ``listing``) differ from the published ones, naming the class and both values."""
    canonical = canonical_classes()
    if len(names) != len(canonical.names):
        raise InputError(
            f"{DATASET}: {names_file}: class names: expected {len(canonical.names)}, found {len(names)}; this copy "
            f"is not the published Cars196"
        )
    for class_id, (found, expected) in enumerate(zip(names, canonical.names, strict=True), start=1):
        if found.strip() != expected:
            raise InputError(
                f"{DATASET}: {names_file}: class {class_id}: name: expected {expected!r} (the published "
                f"cars_meta.mat), found {found!r}; this copy is not the published Cars196"
            )
    counts = Counter(labels)
    for class_id in sorted(set(canonical.images) | set(counts)):
        expected, found = canonical.images.get(class_id, 0), counts.get(class_id, 0)
        if found != expected:
            name = canonical.names[class_id - 1] if 0 < class_id <= len(canonical.names) else "not a class"
            raise InputError(
                f"{DATASET}: {listing}: class {class_id} ({name}): expected {expected} images (the published "
                f"annotations), found {found}; this copy is not the published Cars196 (images missing, added or "
                f"relabelled)"
            )
