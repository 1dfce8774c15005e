"""What a Cars196 layout reader returns: every image with the class id its annotation file gives, and the class
names the copy carries, whatever the layout (original, devkit, Kaggle class folders)."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path


@dataclass(frozen=True)
class CarsListing:
    """``entries``: (path relative to the dataset folder, class id 1-196) for every image; ``names``: the copy's
    class names in class-id order, from ``names_file``; ``listings``: the annotation files the entries come from;
    ``annotation_files``: (file, published name) pairs whose published md5 identifies the copy."""

    layout: str
    entries: list[tuple[str, int]]
    names: tuple[str, ...]
    names_file: Path
    listings: tuple[Path, ...]
    annotation_files: tuple[tuple[Path, str], ...] = ()
