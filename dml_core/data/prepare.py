"""Getting a dataset onto disk and indexed: download or take the user's archives/folders, verify, write the
index.

The one entry point is :func:`prepare` (``dml prepare`` calls it). Layout: everything lives in
``<root>/<dataset>/``; archives are unpacked there, user folders are linked there (no copy of large data),
and ``dml_index.csv`` is written there last, only once the split checks pass.
"""

from __future__ import annotations

import contextlib
import shutil
import tempfile
from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

from dml_core.data.archives import extract, is_archive
from dml_core.data.download import download, md5_of
from dml_core.data.index import IndexRow, index_path, write_index
from dml_core.data.registry import DatasetSpec, get_spec
from dml_core.data.verify import verify_rows
from dml_core.errors import InputError


@dataclass(frozen=True)
class Prepared:
    """What ``prepare`` produced: the dataset folder, its index file and the images per split."""

    dataset: str
    dataset_dir: Path
    index_file: Path
    images_per_split: dict[str, int]


def _check_md5(spec: DatasetSpec, source: Path) -> None:
    known = spec.known_file(source.name)
    if known is None:
        return
    found = md5_of(source)
    if found != known.md5:
        raise InputError(
            f"{source}: checksum mismatch: expected md5 {known.md5} (the published {known.filename}), "
            f"found {found}; this is a damaged copy or another release: download it again, or, if you trust "
            f"this copy (a repacked mirror), extract it and pass the folder with --archive DIR (then only "
            f"the counts and annotation files are checked)"
        )


def _bring_in(spec: DatasetSpec, source: Path, dataset_dir: Path) -> None:
    """Make one user-supplied archive, file or folder part of ``dataset_dir``."""
    if not source.exists():
        raise InputError(f"{source}: --archive: no such file or folder")
    source = source.resolve()
    target = dataset_dir / source.name
    if source == dataset_dir or dataset_dir.resolve() in source.parents:
        return  # already inside the dataset folder
    if source.is_dir():
        if target.is_symlink():
            target.unlink()
        elif target.exists():
            raise InputError(
                f"{source}: --archive: {target} already exists and is not a link; remove it or pass that folder instead"
            )
        target.symlink_to(source, target_is_directory=True)  # link, not copy: image folders are large
        return
    _check_md5(spec, source)
    if is_archive(source):
        extract(source, dataset_dir)
    else:  # an annotation file shipped on its own (cars_annos.mat, list_eval_partition.txt)
        shutil.copy2(source, target)


def _download_all(spec: DatasetSpec, dataset_dir: Path, progress: bool) -> None:
    for known in spec.downloads:
        archive = download(known.url, dataset_dir / known.filename, known.md5, progress=progress)
        extract(archive, dataset_dir)


def _collect_rows(
    spec: DatasetSpec, dataset_dir: Path, sources: Sequence[Path], allow_download: bool, progress: bool
) -> list[IndexRow]:
    if sources or spec.generated:
        return spec.build_index(dataset_dir)
    try:  # already there from an earlier run?
        return spec.build_index(dataset_dir)
    except InputError as error:
        if not (spec.downloads and allow_download):
            raise InputError(f"{error} {spec.title}: {spec.how_to_prepare}.") from None
    _download_all(spec, dataset_dir, progress)
    return spec.build_index(dataset_dir)


def _generate_in_place(spec: DatasetSpec, dataset_dir: Path) -> None:
    """Generate into a private folder, then rename it into place: processes that generate at the same time
    (the ranks of a multi-process run, local jobs sharing a data root) never read each other's half-written
    files; whoever renames first wins and the others discard their copy."""
    dataset_dir.parent.mkdir(parents=True, exist_ok=True)
    private = Path(tempfile.mkdtemp(prefix=f".{dataset_dir.name}.", dir=dataset_dir.parent))
    try:
        write_index(private / "new", spec.build_index(private / "new"))
        if dataset_dir.exists() and not index_path(dataset_dir).is_file():
            with contextlib.suppress(FileNotFoundError):  # a leftover without index (killed run): set it aside
                dataset_dir.rename(private / "stale")
        try:
            (private / "new").rename(dataset_dir)
        except OSError:
            if not index_path(dataset_dir).is_file():  # not a lost race: something else is in the way
                raise
    finally:
        shutil.rmtree(private, ignore_errors=True)


def prepare(
    dataset: str,
    root: Path,
    sources: Sequence[Path] = (),
    *,
    allow_download: bool = True,
    progress: bool = True,
) -> Prepared:
    """Prepare ``dataset`` under ``root``: bring in ``sources`` (archives, annotation files or folders), or
    download the published archive where one exists, then verify the DML split and write the index.

    Refuses classification splits, missing annotation files, missing images, checksum mismatches and wrong
    counts with an :class:`InputError` that says what to do.
    """
    spec = get_spec(dataset)
    if spec.generated and sources:
        raise InputError(f"{dataset}: --archive: this dataset is generated here and takes no archive")
    dataset_dir = Path(root) / dataset
    if spec.generated and not index_path(dataset_dir).is_file():
        _generate_in_place(spec, dataset_dir)
    dataset_dir.mkdir(parents=True, exist_ok=True)
    for source in sources:
        _bring_in(spec, Path(source), dataset_dir)
    rows = _collect_rows(spec, dataset_dir, sources, allow_download, progress)
    verify_rows(spec, rows, dataset_dir)
    index_file = write_index(dataset_dir, rows)
    counts = Counter(row.split for row in rows)
    return Prepared(dataset, dataset_dir, index_file, {split: counts[split] for split in spec.splits})
