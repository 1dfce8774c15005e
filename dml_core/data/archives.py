"""Unpacking user-supplied or downloaded archives (.tgz/.tar/.tar.gz/.zip) safely into a dataset folder, with a
progress bar over the members (SOP's archive holds 120k files)."""

from __future__ import annotations

import itertools
import shutil
import tarfile
import tempfile
import zipfile
from collections.abc import Callable
from pathlib import Path, PurePosixPath

from tqdm import tqdm

from dml_core.atomic_io import owner_tag, remove_stale_temporaries
from dml_core.errors import InputError

ARCHIVE_SUFFIXES = (".tgz", ".tar.gz", ".tar", ".tar.bz2", ".tbz2", ".tar.xz", ".zip")
# Extraction stages in a hidden folder of the destination, named with its owner (see atomic_io.owner_tag).
EXTRACT_PREFIX = ".extract-"
MEMBERS_READ = 64


def is_archive(path: Path) -> bool:
    return Path(path).name.lower().endswith(ARCHIVE_SUFFIXES)


def top_folders(archive: Path, members: int = MEMBERS_READ) -> set[str]:
    """The top-level names among the first ``members`` entries of a zip or tar archive (whatever its file name);
    empty if it is neither. Reading a tar's first entries decompresses only its beginning."""
    try:
        if zipfile.is_zipfile(archive):
            with zipfile.ZipFile(archive) as bundle:
                names = bundle.namelist()[:members]
        else:
            with tarfile.open(archive) as bundle:
                names = [member.name for member in itertools.islice(bundle, members)]
    except (tarfile.TarError, zipfile.BadZipFile, EOFError, OSError):
        return set()
    return {PurePosixPath(name).parts[0] for name in names if PurePosixPath(name).parts}


def _extract_zip(archive: Path, target: Path, bar: tqdm) -> None:
    with zipfile.ZipFile(archive) as bundle:
        members = bundle.namelist()
        for member in members:  # refuse entries escaping the target (../, absolute paths)
            resolved = (target / member).resolve()
            if resolved != target.resolve() and target.resolve() not in resolved.parents:
                raise InputError(f"{archive}: member {member!r} would be written outside {target}; refusing")
        bar.reset(total=len(members))
        for member in members:
            bundle.extract(member, target)
            bar.update()


def _extract_tar(archive: Path, target: Path, bar: tqdm) -> None:
    # Member by member, so the bar moves; a compressed tar's member count is not known before the end.
    with tarfile.open(archive) as bundle:
        for member in bundle:
            bundle.extract(member, target, filter="data")  # "data" refuses links/paths escaping the target
            bar.update()


def replace_entry(entry: Path, target: Path) -> Path:
    """Move ``entry`` onto ``target``, replacing what is there."""
    if target.is_symlink() or target.is_file():
        target.unlink()
    elif target.is_dir():
        shutil.rmtree(target)
    entry.rename(target)
    return target


def extract(
    archive: Path,
    destination: Path,
    *,
    progress: bool = False,
    place: Callable[[Path, Path], Path] = replace_entry,
) -> list[Path]:
    """Unpack ``archive`` into ``destination``; return the top-level entries it created. ``progress``: a bar over
    the members.

    Unpacks into a temporary folder first and moves the entries into place (``place(entry, target)``; default:
    replacing an entry of the same name), so an interrupted extraction leaves no half folder under its final name.
    Staging folders that killed extractions left are removed first.
    """
    archive, destination = Path(archive), Path(destination)
    destination.mkdir(parents=True, exist_ok=True)
    remove_stale_temporaries(destination, EXTRACT_PREFIX)
    staging = Path(tempfile.mkdtemp(prefix=f"{EXTRACT_PREFIX}{owner_tag()}.", dir=destination))
    try:
        try:
            with tqdm(desc=f"extract {archive.name}", unit=" files", disable=not progress) as bar:
                if zipfile.is_zipfile(archive):
                    _extract_zip(archive, staging, bar)
                else:
                    _extract_tar(archive, staging, bar)
        except (tarfile.TarError, zipfile.BadZipFile, EOFError, OSError) as error:
            reason = " ".join(str(error).split())  # tarfile's reason spans lines: one line, as every error
            raise InputError(
                f"{archive}: cannot unpack ({reason}); the archive is damaged or incomplete, download it again"
            ) from None
        return [place(entry, destination / entry.name) for entry in sorted(staging.iterdir())]
    finally:
        shutil.rmtree(staging, ignore_errors=True)
