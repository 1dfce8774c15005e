"""``load_split``: the images of one split of a prepared dataset, re-verified on every load."""

from __future__ import annotations

from pathlib import Path

from dml_core.data.index import SplitIndex, read_index, split_index
from dml_core.data.registry import DatasetSpec
from dml_core.data.verify import verify_against_layout, verify_rows
from dml_core.errors import InputError


def load_split(spec: DatasetSpec, root: Path, split: str) -> SplitIndex:
    """Paths and int labels of ``split`` of the dataset ``spec`` prepared under ``root`` (``<root>/<name>/``).

    Checks the exact DML counts of every split and every row against the dataset's annotation files each time,
    so a hand-edited or foreign index cannot slip through. Reading never writes: a generated dataset (the embedded
    glyphs) is made by ``prepare`` (``data.prepare.ensure_generated`` before a run), not here.
    """
    if split not in spec.splits:
        raise InputError(f"{spec.name}: split: expected one of {'/'.join(spec.splits)}, found {split!r}")
    dataset_dir = Path(root) / spec.name
    rows = read_index(dataset_dir)
    verify_rows(spec, rows, dataset_dir)
    verify_against_layout(spec, rows, dataset_dir)
    return split_index(spec.name, dataset_dir, rows, split)
