"""The one downloader, for datasets and weight files: a progress bar, resume of a partial ``.part`` file via a Range
request, md5/sha256 checks, then an atomic rename onto the final name (so a finished name always holds verified
bytes). Sources are tried in order, each failure said in one line; hosts see a User-Agent naming the suite, as
torchvision's downloader names itself (some hosts refuse Python's default one)."""

from __future__ import annotations

import hashlib
import os
import sys
import urllib.error
import urllib.request
from collections.abc import Callable, Iterable, Sequence
from pathlib import Path
from typing import TypeVar
from urllib.parse import urlsplit

from tqdm import tqdm

from dml_core import __version__
from dml_core.errors import InputError

CHUNK_BYTES = 1 << 20
USER_AGENT = f"dml-suite/{__version__} (deep metric learning reproduction suite; Python urllib)"

Attempt = TypeVar("Attempt")
Result = TypeVar("Result")


class DownloadError(InputError):
    """A download that failed; ``line`` is the one line said before the next source is tried."""

    def __init__(self, url: str, reason: str, message: str | None = None) -> None:
        self.url, self.reason = url, reason
        super().__init__(message or f"{url}: download failed ({reason})")

    @property
    def host(self) -> str:
        return urlsplit(self.url).netloc or self.url

    @property
    def line(self) -> str:
        return f"{self.host}: {self.reason}"


class AllSourcesFailed(InputError):
    """Every source of a file failed; ``failures`` holds each one's error, in the order tried."""

    def __init__(self, what: str, failures: Sequence[DownloadError]) -> None:
        self.failures = tuple(failures)
        tried = "; ".join(f"{failure.url} ({failure.reason})" for failure in self.failures)
        super().__init__(f"{what}: every source failed: {tried or 'no source is listed'}")

    @property
    def urls(self) -> list[str]:
        return [failure.url for failure in self.failures]


def file_digests(path: Path, algorithms: Iterable[str]) -> dict[str, str]:
    """Hex digests of a file for each of ``algorithms`` (``md5``, ``sha256``), in one read."""
    digests = {name: hashlib.new(name) for name in algorithms}
    with Path(path).open("rb") as handle:
        while chunk := handle.read(CHUNK_BYTES):
            for digest in digests.values():
                digest.update(chunk)
    return {name: digest.hexdigest() for name, digest in digests.items()}


def md5_of(path: Path) -> str:
    """Hex md5 of a file, read in chunks."""
    return file_digests(path, ["md5"])["md5"]


def part_path(destination: Path) -> Path:
    """Where the bytes of an unfinished download of ``destination`` accumulate."""
    return destination.with_name(destination.name + ".part")


def _expected(md5: str | None, sha256: str | None) -> dict[str, str]:
    return {name: value for name, value in (("md5", md5), ("sha256", sha256)) if value}


def _mismatches(path: Path, expected: dict[str, str]) -> list[str]:
    found = file_digests(path, expected)
    return [f"expected {name} {value}, found {found[name]}" for name, value in expected.items() if found[name] != value]


def _open(url: str, offset: int, timeout: float):
    headers = {"User-Agent": USER_AGENT}
    if offset:
        headers["Range"] = f"bytes={offset}-"
    return urllib.request.urlopen(urllib.request.Request(url, headers=headers), timeout=timeout)


def _receive(response, partial: Path, offset: int, label: str, progress: bool) -> None:
    if offset and response.status != 206:  # the server ignored Range: start over
        offset = 0
    length = response.headers.get("Content-Length")
    total = offset + int(length) if length is not None else None
    with (
        partial.open("ab" if offset else "wb") as handle,
        tqdm(total=total, initial=offset, unit="B", unit_scale=True, desc=label, disable=not progress) as bar,
    ):
        while chunk := response.read(CHUNK_BYTES):
            handle.write(chunk)
            bar.update(len(chunk))
        handle.flush()
        os.fsync(handle.fileno())


def download(
    url: str,
    destination: Path,
    md5: str | None = None,
    *,
    sha256: str | None = None,
    progress: bool = True,
    timeout: float = 60.0,
) -> Path:
    """Fetch ``url`` into ``destination``; resume ``destination.part`` if present; verify ``md5`` and ``sha256``
    when given. A failure is a :class:`DownloadError` (one line: host and HTTP status or error); on a checksum
    mismatch the partial file is removed (its bytes are not trusted)."""
    destination = Path(destination)
    expected = _expected(md5, sha256)
    if destination.is_file() and not _mismatches(destination, expected):
        return destination
    destination.parent.mkdir(parents=True, exist_ok=True)
    partial = part_path(destination)
    offset = partial.stat().st_size if partial.is_file() else 0
    try:
        with _open(url, offset, timeout) as response:
            _receive(response, partial, offset, destination.name, progress)
    except urllib.error.HTTPError as error:
        if error.code != 416 or not offset:  # 416: the part file already holds every byte
            raise DownloadError(url, f"HTTP {error.code} {error.reason}") from None
    except (urllib.error.URLError, OSError) as error:
        reason = getattr(error, "reason", None) or error
        raise DownloadError(
            url,
            str(reason),
            f"{url}: download failed ({reason}); check the connection or pass --archive with a copy you "
            f"downloaded yourself",
        ) from None
    problems = _mismatches(partial, expected)
    if problems:
        partial.unlink()
        raise DownloadError(
            url,
            f"checksum mismatch: {'; '.join(problems)}",
            f"{destination.name}: checksum mismatch for {url}: {'; '.join(problems)}; the partial file was "
            f"removed: run again to download afresh, or pass --archive with a copy you trust",
        )
    os.replace(partial, destination)
    return destination


def say(line: str) -> None:
    """The default way a failed source is reported: one line on stderr, beside the progress bars."""
    print(line, file=sys.stderr, flush=True)


def first_that_downloads(
    attempts: Sequence[Attempt],
    fetch: Callable[[Attempt], Result],
    what: str,
    report: Callable[[str], None] = say,
) -> Result:
    """``fetch(attempt)`` for each attempt in order until one does not raise :class:`DownloadError`; each failure
    is reported in one line (``what: host: reason; ...``). Raises :class:`AllSourcesFailed` when none succeeds."""
    failures: list[DownloadError] = []
    for index, attempt in enumerate(attempts):
        try:
            return fetch(attempt)
        except DownloadError as error:
            failures.append(error)
            then = "trying the next source" if index + 1 < len(attempts) else "no source left"
            report(f"{what}: {error.line}; {then}")
    raise AllSourcesFailed(what, failures)
