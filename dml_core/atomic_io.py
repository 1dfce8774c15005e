"""Atomic file writes: a reader (or a killed process) never sees a half-written file.

Write to a temporary file in the destination folder, fsync, then ``os.replace`` (atomic on POSIX). A write that
fails (disk full, read-only folder, a file in the way) is an :class:`OutputError` naming the file, and free space
is checked before a write whose size is known.

Temporary files and folders carry their owner (``<host>-<pid>``, :func:`owner_tag`) in their name, so the next
writer can tell a killed process's leftovers (its pid no longer runs on this host) from a live writer's, and
removes them (:func:`remove_stale_temporaries`) instead of letting them pile up or get in the way.
"""

from __future__ import annotations

import contextlib
import json
import os
import re
import shutil
import socket
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import IO, Any

from dml_core.errors import InputError, OutputError

# The process umask (reading it means setting it, so set it back at once).
_UMASK = os.umask(0o022)
os.umask(_UMASK)

# Temporaries named before owner tags carry only tempfile's random part; such a leftover is stale when it is older
# than this process (nothing of ours wrote it, and a live writer would still be touching it).
_PROCESS_START = time.time()
_UNTAGGED_RANDOM = re.compile(r"[a-z0-9_]{8}")

FREE_SPACE_MARGIN = 16 * 2**20
"""Bytes left free on top of a file's size when checking the space for it (file systems need some room)."""


def _host() -> str:
    return re.sub(r"[^A-Za-z0-9-]", "-", socket.gethostname()) or "host"


def owner_tag() -> str:
    """``<host>-<pid>`` of this process, for the names of its temporaries (no dots: names are split on them).

    >>> owner_tag().rsplit("-", 1)[1] == str(os.getpid())
    True
    """
    return f"{_host()}-{os.getpid()}"


def _pid_alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:  # someone else's live process
        return True
    return True


def is_stale_temporary(middle: str, modified: float) -> bool:
    """Whether a temporary whose name carries ``middle`` (``<owner tag>[.<random>]``) is a dead process's
    leftover: written on this host by a process that no longer runs. A name without owner tag (tempfile's random
    part alone, from before tags) is stale when it is older than this process. Anything else is left alone.

    >>> is_stale_temporary(f"{owner_tag()}.abcd1234", 0.0)  # this process: live
    False
    >>> is_stale_temporary("another-host-1.abcd1234", 0.0)  # not ours to judge
    False
    """
    tag = middle.split(".", 1)[0]
    host, _, pid = tag.rpartition("-")
    if host and pid.isdigit():
        return host == _host() and int(pid) != os.getpid() and not _pid_alive(int(pid))
    return _UNTAGGED_RANDOM.fullmatch(middle) is not None and modified < _PROCESS_START


def remove_stale_temporaries(folder: str | os.PathLike, prefix: str, suffix: str = "") -> list[Path]:
    """Remove the entries of ``folder`` named ``prefix + <owner tag>[.<random>] + suffix`` (files or folders)
    that a killed process left (see :func:`is_stale_temporary`); return what was removed. Best effort: an entry
    that cannot be removed stays."""
    try:
        entries = list(os.scandir(folder))
    except OSError:
        return []
    removed = []
    for entry in entries:
        name = entry.name
        if len(name) <= len(prefix) + len(suffix) or not (name.startswith(prefix) and name.endswith(suffix)):
            continue
        try:
            modified = entry.stat(follow_symlinks=False).st_mtime
        except OSError:
            continue
        if not is_stale_temporary(name[len(prefix) : len(name) - len(suffix)], modified):
            continue
        path = Path(entry.path)
        with contextlib.suppress(OSError):
            if entry.is_dir(follow_symlinks=False):
                shutil.rmtree(path)
            else:
                path.unlink()
            removed.append(path)
    return removed


def _reason(error: OSError) -> str:
    reason = error.strerror or str(error) or type(error).__name__
    return f"{reason}: {error.filename}" if error.filename else reason


def nearest_existing(path: str | os.PathLike) -> Path:
    """``path`` made absolute if it exists, else its nearest existing ancestor: where it would be created."""
    path = Path(path).absolute()
    return next(candidate for candidate in (path, *path.parents) if candidate.exists())


def free_disk_bytes(path: str | os.PathLike) -> int:
    """Free bytes on the file system that holds ``path`` (or would hold it)."""
    return shutil.disk_usage(nearest_existing(path)).free


def require_free_space(path: str | os.PathLike, size: int, margin: int = FREE_SPACE_MARGIN) -> None:
    """Raise :class:`OutputError` naming the folder, the bytes needed and the bytes free unless the file system
    holding ``path`` has room for ``size`` bytes plus ``margin``."""
    folder = nearest_existing(Path(path).absolute().parent)
    free = shutil.disk_usage(folder).free
    if free < size + margin:
        raise OutputError(
            f"{folder}: not enough free space to write {Path(path).name}: needs {size + margin:,} bytes "
            f"({size:,} plus a {margin:,}-byte margin), {free:,} free; free some space or choose another location"
        )


def atomic_write(path: str | os.PathLike, write: Callable[[IO[bytes]], None]) -> Path:
    """Call ``write(fileobj)`` on a temporary file and move it onto ``path`` in one step.

    Stale temporaries of ``path`` left by killed writers are removed first. Any OSError on the way becomes an
    :class:`OutputError` naming ``path``; the previous file, if any, is left unchanged.
    """
    path = Path(path)
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        remove_stale_temporaries(path.parent, f".{path.name}.", ".tmp")
        fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.{owner_tag()}.", suffix=".tmp", dir=path.parent)
    except OSError as error:
        raise OutputError(f"{path}: cannot write here ({_reason(error)})") from error
    try:
        with os.fdopen(fd, "wb") as handle:
            os.fchmod(handle.fileno(), 0o666 & ~_UMASK)  # mkstemp makes 0600; give the file the usual permissions
            write(handle)
            handle.flush()
            os.fsync(handle.fileno())
        os.replace(tmp, path)
    except BaseException as error:
        Path(tmp).unlink(missing_ok=True)
        if isinstance(error, OSError) and not isinstance(error, OutputError):
            raise OutputError(f"{path}: write failed ({_reason(error)}); an earlier file there is unchanged") from error
        raise
    return path


def atomic_write_bytes(path: str | os.PathLike, data: bytes | memoryview) -> Path:
    """Write ``data`` atomically, after checking that the file system has room for it."""
    require_free_space(path, len(data))
    return atomic_write(path, lambda handle: handle.write(data))


def atomic_write_text(path: str | os.PathLike, text: str) -> Path:
    return atomic_write_bytes(path, text.encode("utf-8"))


def atomic_write_json(path: str | os.PathLike, payload: Any) -> Path:
    """JSON with sorted keys and a trailing newline, so results files diff cleanly."""
    return atomic_write_text(path, json.dumps(payload, indent=2, sort_keys=True, allow_nan=False) + "\n")


def read_json_object(path: str | os.PathLike, what: str) -> dict:
    """A JSON file that must hold an object; a missing, unreadable, malformed or non-object file is an
    ``InputError`` naming the file and ``what`` it should have been."""
    path = Path(path)
    try:
        payload = json.loads(path.read_text(encoding="utf-8"))
    except FileNotFoundError:
        raise InputError(f"{path}: {what} not found") from None
    except IsADirectoryError:
        raise InputError(f"{path}: is a folder, expected the {what} (a JSON file)") from None
    except UnicodeDecodeError:
        raise InputError(f"{path}: not valid JSON (not UTF-8 text); expected the {what}") from None
    except OSError as error:
        raise InputError(f"{path}: cannot read the {what} ({_reason(error)})") from None
    except json.JSONDecodeError as error:
        raise InputError(f"{path}: not valid JSON ({error})") from None
    if not isinstance(payload, dict):
        raise InputError(f"{path}: expected a JSON object, found {type(payload).__name__}")
    return payload
