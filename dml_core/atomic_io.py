"""Atomic file writes: a reader (or a killed process) never sees a half-written file.

Write to a temporary file in the destination folder, fsync, then ``os.replace`` (atomic on POSIX).
"""

from __future__ import annotations

import json
import os
import tempfile
from collections.abc import Callable
from pathlib import Path
from typing import IO, Any

# The process umask (reading it means setting it, so set it back at once).
_UMASK = os.umask(0o022)
os.umask(_UMASK)


def atomic_write(path: str | os.PathLike, write: Callable[[IO[bytes]], None]) -> Path:
    """Call ``write(fileobj)`` on a temporary file and move it onto ``path`` in one step."""
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.", suffix=".tmp", dir=path.parent)
    try:
        os.chmod(tmp, 0o666 & ~_UMASK)  # mkstemp makes 0600; give the file the usual permissions
        with os.fdopen(fd, "wb") as handle:
            write(handle)
            handle.flush()
            os.fsync(handle.fileno())
        os.replace(tmp, path)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise
    return path


def atomic_write_bytes(path: str | os.PathLike, data: bytes) -> Path:
    return atomic_write(path, lambda handle: handle.write(data))


def atomic_write_text(path: str | os.PathLike, text: str) -> Path:
    return atomic_write_bytes(path, text.encode("utf-8"))


def atomic_write_json(path: str | os.PathLike, payload: Any) -> Path:
    """JSON with sorted keys and a trailing newline, so results files diff cleanly."""
    return atomic_write_text(path, json.dumps(payload, indent=2, sort_keys=True, allow_nan=False) + "\n")


def read_json_object(path: str | os.PathLike, what: str) -> dict:
    """A JSON file that must hold an object; a missing, malformed or non-object file is an ``InputError``
    naming the file and ``what`` it should have been."""
    from dml_core.errors import InputError

    path = Path(path)
    try:
        payload = json.loads(path.read_text())
    except FileNotFoundError:
        raise InputError(f"{path}: {what} not found") from None
    except json.JSONDecodeError as error:
        raise InputError(f"{path}: not valid JSON ({error})") from None
    if not isinstance(payload, dict):
        raise InputError(f"{path}: expected a JSON object, found {type(payload).__name__}")
    return payload
