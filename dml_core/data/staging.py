"""All or nothing in a dataset folder: what one ``prepare`` puts there (extracted folders, linked folders, copied
annotation files) stays only once the copy is verified and its index written (:meth:`Staging.commit`); a prepare
that fails or is interrupted takes it all out again and puts back what it replaced, so the next try finds the
folder as it was, never a second copy in the way.

A journal beside the entries (``.prepare-<owner>.json``) names what was created and what was set aside (in
``.replaced-<owner>/``) before each change, so the next prepare also undoes what a killed one left
(:func:`undo_killed_prepares`). Both are hidden: the layouts' searches never look into hidden folders.
"""

from __future__ import annotations

import contextlib
import os
import shutil
from pathlib import Path

from dml_core.atomic_io import atomic_write_json, is_stale_temporary, owner_tag, read_json_object
from dml_core.errors import InputError

JOURNAL_PREFIX, JOURNAL_SUFFIX = ".prepare-", ".json"
REPLACED_PREFIX = ".replaced-"


def _remove(path: Path) -> None:
    if path.is_symlink() or path.is_file():
        path.unlink()
    elif path.is_dir():
        shutil.rmtree(path)


class Staging:
    """The changes one prepare makes to ``folder``'s top-level entries, undone on leaving the ``with`` block unless
    :meth:`commit` was called (an exception, Ctrl-C included, undoes them)."""

    def __init__(self, folder: Path, owner: str | None = None) -> None:
        self.folder = Path(folder)
        owner = owner or owner_tag()
        self.journal = self.folder / f"{JOURNAL_PREFIX}{owner}{JOURNAL_SUFFIX}"
        self.replaced_folder = self.folder / f"{REPLACED_PREFIX}{owner}"
        self.created: list[str] = []
        self.replaced: list[str] = []
        self.committed = False

    def __enter__(self) -> Staging:
        return self

    def __exit__(self, *exc_info) -> None:
        if not self.committed:
            self.undo()

    def _write_journal(self) -> None:
        atomic_write_json(self.journal, {"created": self.created, "replaced": self.replaced})

    def _make_room(self, name: str) -> None:
        """Clear ``folder/name``: an entry of this prepare is removed, an earlier one set aside to be put back."""
        target = self.folder / name
        if not (target.exists() or target.is_symlink()):
            return
        if name in self.created:
            _remove(target)
            return
        self.replaced.append(name)
        self._write_journal()  # before the move: a kill in between leaves the entry where it was
        self.replaced_folder.mkdir(exist_ok=True)
        target.rename(self.replaced_folder / name)

    def _created(self, name: str) -> Path:
        if name not in self.created:
            self.created.append(name)
            self._write_journal()  # before the entry appears: a kill after it is undone too
        return self.folder / name

    def move_in(self, entry: Path, name: str | None = None) -> Path:
        """Move ``entry`` (on the same file system: a staging folder inside ``folder``) to ``folder/name``."""
        name = name or entry.name
        self._make_room(name)
        target = self._created(name)
        entry.rename(target)
        return target

    def link(self, source: Path, name: str | None = None) -> Path:
        """A link ``folder/name`` to the folder ``source`` (not a copy: image folders are large)."""
        name = name or source.name
        self._make_room(name)
        target = self._created(name)
        target.symlink_to(source, target_is_directory=True)
        return target

    def copy(self, source: Path, name: str | None = None) -> Path:
        """A copy of the file ``source`` at ``folder/name`` (annotation files: small)."""
        name = name or source.name
        temporary = self.folder / f".copy-{owner_tag()}.{name}"
        shutil.copy2(source, temporary)
        return self.move_in(temporary, name)

    def commit(self) -> None:
        """Keep every change: what was set aside is removed."""
        shutil.rmtree(self.replaced_folder, ignore_errors=True)
        self.journal.unlink(missing_ok=True)
        self.committed = True

    def undo(self) -> None:
        """Take out what this prepare created and put back what it set aside."""
        for name in reversed(self.created):
            with contextlib.suppress(FileNotFoundError):
                _remove(self.folder / name)
        for name in self.replaced:
            kept = self.replaced_folder / name
            if kept.exists() or kept.is_symlink():
                kept.rename(self.folder / name)
        shutil.rmtree(self.replaced_folder, ignore_errors=True)
        self.journal.unlink(missing_ok=True)
        self.committed = True  # nothing left to undo


def undo_killed_prepares(folder: Path) -> list[str]:
    """Undo what prepares killed in ``folder`` left (their journals name it); return the owners undone. A live
    prepare's journal (another process's, on this host) and other hosts' are left alone."""
    undone = []
    try:
        entries = sorted(os.scandir(folder), key=lambda entry: entry.name)
    except OSError:
        return undone
    for entry in entries:
        name = entry.name
        if not (name.startswith(JOURNAL_PREFIX) and name.endswith(JOURNAL_SUFFIX)):
            continue
        owner = name[len(JOURNAL_PREFIX) : -len(JOURNAL_SUFFIX)]
        if not is_stale_temporary(owner, entry.stat().st_mtime):
            continue
        staging = Staging(folder, owner)
        try:
            record = read_json_object(staging.journal, "prepare journal")
        except InputError:  # unreadable: nothing can be undone by it
            record = {}
        staging.created = [str(item) for item in record.get("created", [])]
        staging.replaced = [str(item) for item in record.get("replaced", [])]
        staging.undo()
        undone.append(owner)
    return undone
