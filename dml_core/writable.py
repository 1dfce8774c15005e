"""Checking, before any work, that the places a command will write to can take a file.

A run that finds its output folder read-only at its first checkpoint, or its results path blocked by a file after
hours of training, has lost that time. These checks run first: they find the nearest part of the path that
exists, refuse a file where a folder must be (or a folder where the file must be), and try to create (and at once
remove) a file in the folder that exists, so read-only folders and file systems are found however permissions are
set. Nothing is created on the way: missing folders are made when the output is written.
"""

from __future__ import annotations

import os
import tempfile
from pathlib import Path

from dml_core.atomic_io import nearest_existing
from dml_core.errors import InputError


def _existing_folder(folder: Path, path: Path, what: str) -> Path:
    """The nearest existing ancestor of ``folder`` (``folder`` itself if it exists), which must be a folder;
    errors name ``path``, the path the user gave."""
    current = nearest_existing(folder)
    if not current.is_dir():
        raise InputError(f"{what} {path}: expected a folder to write in, found a file in the way ({current})")
    return current


def _probe(folder: Path, path: Path, what: str) -> None:
    try:
        handle, probe = tempfile.mkstemp(prefix=".dml-write-check-", dir=folder)
    except OSError as error:
        reason = error.strerror or type(error).__name__
        raise InputError(f"{what} {path}: cannot write in {folder} ({reason})") from None
    os.close(handle)
    Path(probe).unlink(missing_ok=True)


def require_writable_folder(path: str | os.PathLike, what: str) -> None:
    """``path`` is, or can become, a folder this process can write files in; an ``InputError`` naming ``what``
    (the option, e.g. ``--out``) and the path otherwise."""
    path = Path(path)
    _probe(_existing_folder(path, path, what), path, what)


def require_writable_file(path: str | os.PathLike, what: str) -> None:
    """``path`` can be written as a file: not a folder, in a folder it can be written in (as
    :func:`require_writable_folder` checks)."""
    path = Path(path)
    if path.is_dir():
        raise InputError(f"{what} {path}: expected a file path, found a folder")
    _probe(_existing_folder(path.parent, path, what), path, what)
