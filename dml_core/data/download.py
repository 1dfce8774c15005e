"""Download one file over HTTP(S): progress bar, resume of a partial ``.part`` file via a Range request, md5
check, then an atomic rename onto the final name (so a finished name always holds verified bytes)."""

from __future__ import annotations

import hashlib
import os
import urllib.error
import urllib.request
from pathlib import Path

from tqdm import tqdm

from dml_core.errors import InputError

CHUNK_BYTES = 1 << 20


def md5_of(path: Path) -> str:
    """Hex md5 of a file, read in chunks."""
    digest = hashlib.md5()
    with Path(path).open("rb") as handle:
        while chunk := handle.read(CHUNK_BYTES):
            digest.update(chunk)
    return digest.hexdigest()


def part_path(destination: Path) -> Path:
    """Where the bytes of an unfinished download of ``destination`` accumulate."""
    return destination.with_name(destination.name + ".part")


def _open(url: str, offset: int, timeout: float):
    request = urllib.request.Request(url, headers={"Range": f"bytes={offset}-"} if offset else {})
    return urllib.request.urlopen(request, timeout=timeout)


def download(url: str, destination: Path, md5: str | None, *, progress: bool = True, timeout: float = 60.0) -> Path:
    """Fetch ``url`` into ``destination``; resume ``destination.part`` if present; verify ``md5`` when given.

    On a checksum mismatch the partial file is removed (its bytes are not trusted) and an
    :class:`InputError` says what to do.
    """
    destination = Path(destination)
    if destination.is_file() and (md5 is None or md5_of(destination) == md5):
        return destination
    destination.parent.mkdir(parents=True, exist_ok=True)
    partial = part_path(destination)
    offset = partial.stat().st_size if partial.is_file() else 0
    try:
        response = _open(url, offset, timeout)
    except urllib.error.HTTPError as error:
        if error.code != 416 or not offset:  # 416: the part file already holds every byte
            raise InputError(f"{url}: download failed (HTTP {error.code} {error.reason})") from None
        response = None
    except (urllib.error.URLError, OSError) as error:
        raise InputError(
            f"{url}: download failed ({error}); check the connection or pass --archive with a "
            f"copy you downloaded yourself"
        ) from None
    if response is not None:
        with response:
            if offset and response.status != 206:  # the server ignored Range: start over
                offset = 0
            length = response.headers.get("Content-Length")
            total = offset + int(length) if length is not None else None
            with (
                partial.open("ab" if offset else "wb") as handle,
                tqdm(
                    total=total,
                    initial=offset,
                    unit="B",
                    unit_scale=True,
                    desc=destination.name,
                    disable=not progress,
                ) as bar,
            ):
                while chunk := response.read(CHUNK_BYTES):
                    handle.write(chunk)
                    bar.update(len(chunk))
                handle.flush()
                os.fsync(handle.fileno())
    if md5 is not None:
        found = md5_of(partial)
        if found != md5:
            partial.unlink()
            raise InputError(
                f"{destination.name}: checksum mismatch for {url}: expected md5 {md5}, found {found}; "
                f"the partial file was removed: run again to download afresh, or pass --archive "
                f"with a copy you trust"
            )
    os.replace(partial, destination)
    return destination
