"""Getting a dataset onto disk and indexed: download or take the user's archives/folders, verify, write the
index; or check a prepared copy without writing (:func:`verify_prepared`).

The one entry point is :func:`prepare` (``dml prepare`` and the runner's fetching call it). Layout: everything lives
in ``<root>/<dataset>/``; archives are unpacked there, user folders are linked there (no copy of large data), and
``dml_index.csv`` is written there last, only once the split checks pass and every image decodes.

All or nothing (``staging``): what a prepare puts in the dataset folder stays only once its index is written; one
that fails, is interrupted or is killed leaves the folder as it found it (the next prepare undoes a killed one's
leftovers). Downloads accumulate in ``<root>/<dataset>/.downloads/`` and are kept when a prepare fails, so the next
one resumes them; they are removed once the copy is prepared. One prepare of a dataset at a time (a file lock).

Downloads: the catalog's sources (``catalog.dataset_sources``) are tried in order, each failure said in one line (a
source whose files arrive but fail the checks too: its entries are taken out and the next source is tried); when
all fail, the error names every URL tried and the manual routes. Checksums: a user's file is checked against the
published checksum whatever its name (identified by name, by md5 or by the folder its content unpacks to); a
checksum with public evidence refuses a copy that differs, one without is only reported; what cannot be checked is
said in :attr:`Prepared.notes`.
"""

from __future__ import annotations

import contextlib
import shutil
import tempfile
from collections import Counter
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path

from filelock import FileLock

from dml_core.atomic_io import owner_tag, remove_stale_temporaries
from dml_core.command_line import DML
from dml_core.data.archives import EXTRACT_PREFIX, extract, is_archive, top_folders
from dml_core.data.catalog import Source, dataset_sources
from dml_core.data.decode_check import check_images_decode
from dml_core.data.download import AllSourcesFailed, DownloadError, download, first_that_downloads, md5_of, say
from dml_core.data.index import IndexRow, index_path, read_index, write_index
from dml_core.data.registry import DatasetSpec, KnownFile
from dml_core.data.staging import Staging, undo_killed_prepares
from dml_core.data.verify import verify_against_layout, verify_rows
from dml_core.errors import InputError

DOWNLOADS_FOLDER = ".downloads"
LOCKS_FOLDER = ".locks"
COPY_PREFIX = ".copy-"


@dataclass(frozen=True)
class Prepared:
    """What ``prepare`` produced: the dataset folder, its index file, the images per split, and one line for each
    check that could not be made (a file with no published checksum, a folder)."""

    dataset: str
    dataset_dir: Path
    index_file: Path
    images_per_split: dict[str, int]
    notes: tuple[str, ...] = ()


def downloads_folder(dataset_dir: Path) -> Path:
    """Where a dataset's downloads accumulate until it is prepared (hidden: never searched as part of the copy)."""
    return Path(dataset_dir) / DOWNLOADS_FOLDER


def _mismatch(source: Path, known: KnownFile, found: str, identified_by: str = "") -> InputError:
    return InputError(
        f"{source}: checksum mismatch: expected md5 {known.md5} (the published {known.filename}{identified_by}), "
        f"found {found}; this is a damaged copy or another release: download it again, or, if you trust "
        f"this copy (a repacked mirror), extract it and pass the folder with --archive DIR (then only "
        f"the counts, identities and annotation files are checked)"
    )


def _unevidenced(path: Path, known: KnownFile, found: str) -> str:
    return (
        f"{path}: md5 {found} differs from {known.md5}, a checksum of {known.filename} that no public source gives "
        "(so it does not refuse the copy: its class names, per-class counts and annotations are checked)"
    )


def _check_release(spec: DatasetSpec, source: Path) -> str | None:
    """Check a user's file against the published md5s, whatever its name; return a note when it cannot be."""
    if not spec.files:
        return f"{source}: md5 not checked: {spec.title} publishes no checksums (its annotations and counts are)"
    found = md5_of(source)
    known = spec.known_file(source.name)
    identified_by = ""
    if known is None:
        if spec.known_by_md5(found):
            return None  # a published file under another name
        folders = top_folders(source)
        known = spec.known_by_top_folder(folders)
        if known is None:
            published = ", ".join(entry.filename for entry in spec.files)
            return (
                f"{source}: md5 not checked: neither its name, its md5 nor its content "
                f"({', '.join(sorted(folders)) or 'not an archive'}) is one of the published {spec.name} files "
                f"({published})"
            )
        identified_by = f", which unpacks to {known.top_folder}/ as this file does"
    if found != known.md5:
        if not known.gates:
            return _unevidenced(source, known, found)
        raise _mismatch(source, known, found, identified_by)
    return None


def _check_annotation_files(spec: DatasetSpec, dataset_dir: Path) -> list[str]:
    """The annotation files the layout reads must have their published md5 where public evidence gives one; a
    difference from a checksum without evidence is a note (returned)."""
    notes = []
    for path, published in spec.annotation_files(dataset_dir):
        known = spec.known_file(published)
        found = md5_of(path) if known else None
        if not known or found == known.md5:
            continue
        if not known.gates:
            notes.append(_unevidenced(path, known, found))
            continue
        raise InputError(
            f"{spec.name}: {path}: checksum mismatch: expected md5 {known.md5} (the published "
            f"{known.filename}), found {found}; {spec.title}'s class ids come from this file alone, so a "
            f"different copy cannot be checked against the published split: use the published file"
        )
    return notes


def _bring_in(spec: DatasetSpec, source: Path, stage: Staging, progress: bool) -> str | None:
    """Make one user-supplied archive, file or folder part of the dataset folder; return a note on what could not
    be checked."""
    dataset_dir = stage.folder
    if not source.exists():
        raise InputError(f"{source}: --archive: no such file or folder")
    source = source.resolve()
    if source == dataset_dir.resolve() or dataset_dir.resolve() in source.parents:
        return None  # already inside the dataset folder
    if source.is_dir():
        target = dataset_dir / source.name
        if target.exists() and not target.is_symlink():
            raise InputError(
                f"{source}: --archive: {target} already exists and is not a link; remove it or pass that folder instead"
            )
        stage.link(source)
        return f"{source}: a folder: no archive md5 to check (its annotations, identities and counts are checked)"
    note = _check_release(spec, source)
    if is_archive(source) or top_folders(source):
        extract(source, dataset_dir, progress=progress, place=lambda entry, _: stage.move_in(entry))
    else:  # an annotation file shipped on its own (cars_annos.mat, list_eval_partition.txt)
        stage.copy(source)
    return note


def _checked_and_indexed(spec: DatasetSpec, dataset_dir: Path, notes: list[str], progress: bool) -> Prepared:
    """Index the copy in ``dataset_dir``, check it (counts, identities, annotation checksums, every image decodes)
    and write its index."""
    rows = spec.build_index(dataset_dir)
    verify_rows(spec, rows, dataset_dir)
    notes += _check_annotation_files(spec, dataset_dir)
    check_images_decode([dataset_dir / row.path for row in rows], progress=progress, desc=f"decode {spec.name}")
    index_file = write_index(dataset_dir, rows)
    return _prepared(spec, dataset_dir, index_file, rows, notes)


def _prepared(spec: DatasetSpec, dataset_dir: Path, index_file: Path, rows: list[IndexRow], notes) -> Prepared:
    counts = Counter(row.split for row in rows)
    return Prepared(spec.name, dataset_dir, index_file, {split: counts[split] for split in spec.splits}, tuple(notes))


def _try_source(
    spec: DatasetSpec, source: Source, dataset_dir: Path, progress: bool, report: Callable[[str], None]
) -> Prepared:
    """Download every file of one source into the downloads folder, unpack or copy it into the dataset folder and
    check the copy; any failure takes the source's entries out again. A file is checked against the checksums its
    source gives, else against the published md5 of its name; a file that is no archive though its name says so (a
    host's HTML page), or a copy that fails the content checks, fails the source like a failed download."""
    notes: list[str] = []
    unchecked: list[Path] = []  # downloads no checksum vouches for: removed if the copy fails its checks
    with Staging(dataset_dir) as stage:
        for item in source.files:
            known = spec.known_file(item.file)
            md5, sha256 = (item.md5, item.sha256) if item.md5 or item.sha256 else (known.md5 if known else None, None)
            path = download(
                item.url, downloads_folder(dataset_dir) / item.file, md5, sha256=sha256, progress=progress,
                report=report,
            )  # fmt: skip
            if not (md5 or sha256):
                unchecked.append(path)
                notes.append(
                    f"{path.name}: downloaded from {item.url} with no checksum to check (its annotations, "
                    "identities and counts are checked)"
                )
            if not (is_archive(path) or top_folders(path)):
                stage.copy(path)
                continue
            try:
                extract(path, dataset_dir, progress=progress, place=lambda entry, _: stage.move_in(entry))
            except InputError as error:
                path.unlink()
                raise DownloadError(item.url, f"not the archive it names ({error})") from None
        try:
            prepared = _checked_and_indexed(spec, dataset_dir, notes, progress)
        except InputError as error:
            for path in unchecked:
                path.unlink()
            raise DownloadError(source.files[-1].url, f"its copy fails the checks ({error})") from None
        stage.commit()
    return prepared


def manual_routes(spec: DatasetSpec, root: Path) -> str:
    """The catalog's routes that need a person, as commands, each ending in the ``dml prepare`` that takes it."""
    routes = []
    for route in dataset_sources(spec.name).manual:
        archives = " ".join(f"--archive {archive}" for archive in route.archives)
        steps = " && ".join(route.steps)
        routes.append(f"{route.name}: `{steps}`, then `{DML} prepare {spec.name} --root {root} {archives}`")
    return "; or ".join(routes)


def _download(spec: DatasetSpec, dataset_dir: Path, progress: bool, report: Callable[[str], None]) -> Prepared:
    try:
        prepared = first_that_downloads(
            dataset_sources(spec.name).sources,
            lambda source: _try_source(spec, source, dataset_dir, progress, report),
            spec.name,
            report,
        )
    except AllSourcesFailed as failed:
        manual = manual_routes(spec, dataset_dir.parent)
        kept = sorted(path.name for path in downloads_folder(dataset_dir).glob("*.part"))
        resumable = f"; the partial downloads ({', '.join(kept)}) are kept and resumed by the next try" if kept else ""
        raise InputError(
            f"{failed}{resumable}; get a copy by hand{': ' + manual if manual else ''}; or pass one you have: "
            f"`{DML} prepare {spec.name} --root {dataset_dir.parent} --archive PATH` ({spec.how_to_prepare})"
        ) from None
    shutil.rmtree(downloads_folder(dataset_dir), ignore_errors=True)  # the copy is prepared: the archives are spare
    return prepared


def _generate_in_place(spec: DatasetSpec, dataset_dir: Path) -> None:
    """Generate into a private folder, then rename it into place: processes that generate at the same time
    (the ranks of a multi-process run, local jobs sharing a data root) never read each other's half-written
    files; whoever renames first wins and the others discard their copy."""
    dataset_dir.parent.mkdir(parents=True, exist_ok=True)
    private = Path(tempfile.mkdtemp(prefix=f".{dataset_dir.name}.{owner_tag()}.", dir=dataset_dir.parent))
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


@contextlib.contextmanager
def _one_prepare_at_a_time(root: Path, dataset_dir: Path) -> Iterator[None]:
    """Hold the dataset's prepare lock (an flock, released however its holder ends), with the leftovers of killed
    prepares undone first; a dataset folder this prepare created is removed again if it fails and leaves it empty."""
    existed = dataset_dir.exists()
    locks = Path(root) / LOCKS_FOLDER
    locks.mkdir(parents=True, exist_ok=True)
    with FileLock(locks / f"{dataset_dir.name}.lock"):
        dataset_dir.mkdir(parents=True, exist_ok=True)
        undo_killed_prepares(dataset_dir)
        for prefix in (EXTRACT_PREFIX, COPY_PREFIX):  # killed extractions' staging folders, killed copies
            remove_stale_temporaries(dataset_dir, prefix)
        try:
            yield
        finally:
            if not existed:
                with contextlib.suppress(OSError):
                    dataset_dir.rmdir()  # only if empty: a kept download keeps it


def prepare(
    spec: DatasetSpec,
    root: Path,
    sources: Sequence[Path] = (),
    *,
    allow_download: bool = True,
    progress: bool = True,
    report: Callable[[str], None] = say,
) -> Prepared:
    """Prepare the dataset ``spec`` under ``root``: bring in ``sources`` (archives, annotation files or folders), or
    check the copy already there, or download from the catalog's sources in order (``report`` says each failure in
    one line), then verify the DML split and write the index. All or nothing: a failure leaves the dataset folder as
    it was (downloads kept for the next try).

    Refuses classification splits, missing annotation files, class ids that disagree with the layout, missing or
    undecodable images, checksum mismatches and wrong counts with an :class:`InputError` that says what to do.
    """
    if spec.generated and sources:
        raise InputError(f"{spec.name}: --archive: this dataset is generated here and takes no archive")
    dataset_dir = Path(root) / spec.name
    if spec.generated:
        remove_stale_temporaries(dataset_dir.parent, f".{dataset_dir.name}.")  # killed generations' private folders
        if not index_path(dataset_dir).is_file():
            _generate_in_place(spec, dataset_dir)
        return _checked_and_indexed(spec, dataset_dir, [], progress)
    with _one_prepare_at_a_time(root, dataset_dir):
        if sources:
            with Staging(dataset_dir) as stage:
                notes = [note for source in sources if (note := _bring_in(spec, Path(source), stage, progress))]
                prepared = _checked_and_indexed(spec, dataset_dir, notes, progress)
                stage.commit()
            return prepared
        try:  # already there from an earlier run, or put there by hand?
            spec.build_index(dataset_dir)
        except InputError as error:
            if not (dataset_sources(spec.name).sources and allow_download):
                manual = manual_routes(spec, dataset_dir.parent)
                raise InputError(
                    f"{error} {spec.title}: {spec.how_to_prepare}{'; ' + manual if manual else ''}."
                ) from None
            return _download(spec, dataset_dir, progress, report)
        return _checked_and_indexed(spec, dataset_dir, [], progress)


def verify_prepared(spec: DatasetSpec, root: Path, progress: bool = True) -> Prepared:
    """Check the prepared copy of ``spec`` under ``root`` as ``prepare`` would, writing nothing: its index must be
    what the annotation files give (identities, splits), with the published counts, the annotation files' published
    checksums, every image on disk and decodable."""
    dataset_dir = Path(root) / spec.name
    rows = read_index(dataset_dir)
    verify_rows(spec, rows, dataset_dir)
    verify_against_layout(spec, rows, dataset_dir)
    notes = _check_annotation_files(spec, dataset_dir)
    check_images_decode([dataset_dir / row.path for row in rows], progress=progress, desc=f"decode {spec.name}")
    return _prepared(spec, dataset_dir, index_path(dataset_dir), rows, notes)


def ensure_generated(spec: DatasetSpec, root: Path) -> None:
    """Generate a generated dataset (the embedded glyphs: no download) under ``root`` unless it is there already,
    as this version lays it out (an index written by an older version, e.g. another split, is written again; the
    images are kept); a run calls it before reading its splits. Any other dataset is left to ``dml prepare``."""
    if not spec.generated:
        return
    dataset_dir = Path(root) / spec.name
    try:
        current = read_index(dataset_dir) == spec.read_layout(dataset_dir)
    except InputError:  # no index yet, or a damaged one: generated data is simply written again
        current = False
    if not current:
        prepare(spec, Path(root), progress=False)
