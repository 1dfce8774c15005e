"""The one downloader, for datasets and weight files: a progress bar, md5/sha256 checks, then an atomic rename onto
the final name (so a finished name always holds verified bytes). Sources are tried in order, each failure said in
one line; hosts see a User-Agent naming the suite, as torchvision's downloader names itself (some hosts refuse
Python's default one).

What the network does to a long download:

- a connection that drops mid-file is resumed at once with a ``Range`` request, and a killed process's ``.part``
  file is resumed by the next one; the answer must honour the range (206 with a ``Content-Range`` starting where the
  part ends): a 200 answer is the whole file and restarts the part cleanly;
- a host that sends nothing for ``DML_DOWNLOAD_STALL_SECONDS`` (default 60) is abandoned with a line saying so,
  while the progress line counts the seconds it has waited;
- bytes that arrived but fail their checksum are removed and reported as such, so the next source is tried.

A ``.part`` file remembers its URL and expected checksums beside it (``.part.json``): another URL resumes it only
when both name the same checksum (the same bytes), else it starts afresh.
"""

from __future__ import annotations

import contextlib
import hashlib
import http.client
import os
import re
import sys
import threading
import time
import urllib.error
import urllib.request
from collections.abc import Callable, Iterable, Sequence
from pathlib import Path
from typing import TypeVar
from urllib.parse import urlsplit

from tqdm import tqdm

from dml_core import __version__
from dml_core.atomic_io import atomic_write_json, read_json_object
from dml_core.errors import InputError

CHUNK_BYTES = 1 << 20
USER_AGENT = f"dml-suite/{__version__} (deep metric learning reproduction suite; Python urllib)"
STALL_VARIABLE = "DML_DOWNLOAD_STALL_SECONDS"
DEFAULT_STALL_SECONDS = 60.0
# Drops in a row that bring no new byte before a source is given up (a drop that brought bytes resets the count).
DROPS_WITHOUT_PROGRESS = 3
WAITING_AFTER_SECONDS = 2.0  # silence shorter than this is not shown
TICK_SECONDS = 1.0  # how often the waiting line is updated

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


def part_record_path(destination: Path) -> Path:
    """The record beside a ``.part`` file: the URL its bytes came from and the checksums they must reach."""
    return destination.with_name(destination.name + ".part.json")


def stall_seconds() -> float:
    """How long a host may send nothing before it is abandoned: ``$DML_DOWNLOAD_STALL_SECONDS``, default 60."""
    configured = os.environ.get(STALL_VARIABLE, "").strip()
    if not configured:
        return DEFAULT_STALL_SECONDS
    try:
        seconds = float(configured)
    except ValueError:
        seconds = -1.0
    if not seconds > 0:
        raise InputError(f"{STALL_VARIABLE}: expected a positive number of seconds, found {configured!r}")
    return seconds


def _expected(md5: str | None, sha256: str | None) -> dict[str, str]:
    return {name: value for name, value in (("md5", md5), ("sha256", sha256)) if value}


def _mismatches(path: Path, expected: dict[str, str]) -> list[str]:
    found = file_digests(path, expected)
    return [f"expected {name} {value}, found {found[name]}" for name, value in expected.items() if found[name] != value]


def _resumable_offset(destination: Path, url: str, expected: dict[str, str]) -> int:
    """The bytes of an earlier ``.part`` file to keep: all of them when they came from ``url`` or were bound for
    the same checksum, else none (the part is removed)."""
    partial, record_path = part_path(destination), part_record_path(destination)
    if not partial.is_file():
        record_path.unlink(missing_ok=True)
        return 0
    try:
        record = read_json_object(record_path, "download record")
    except InputError:  # none (an older version's part, or killed before its record): its checksum decides
        record = {"url": url, "expected": expected}
    if record.get("url") == url or (expected and record.get("expected") == expected):
        return partial.stat().st_size
    partial.unlink()
    return 0


class _Watch:
    """The progress bar of one file across its requests, and a ticker that shows on it how long the host has sent
    nothing (the read itself times out after ``stall`` seconds)."""

    def __init__(self, label: str, stall: float, progress: bool) -> None:
        self.stall = stall
        self.bar = tqdm(unit="B", unit_scale=True, desc=label, disable=not progress)
        self.last_data = time.monotonic()
        self._stop = threading.Event()
        self._ticker = threading.Thread(target=self._tick, daemon=True) if progress else None
        if self._ticker:
            self._ticker.start()

    def _tick(self) -> None:
        shown = False
        while not self._stop.wait(TICK_SECONDS):
            silent = time.monotonic() - self.last_data
            if silent >= WAITING_AFTER_SECONDS:
                self.bar.set_postfix_str(f"waiting: no data for {silent:.0f} s (abandoned at {self.stall:g} s)")
                shown = True
            elif shown:
                self.bar.set_postfix_str("")
                shown = False

    def start(self, offset: int, total: int | None) -> None:
        self.bar.reset(total=total)
        self.bar.update(offset)
        self.last_data = time.monotonic()

    def received(self, count: int) -> None:
        self.last_data = time.monotonic()
        self.bar.update(count)

    def close(self) -> None:
        self._stop.set()
        if self._ticker:
            self._ticker.join()
        self.bar.close()


_CONTENT_RANGE = re.compile(r"bytes (\d+)-(\d+)/(\d+|\*)")


def _answer_start(response, offset: int) -> tuple[int, int | None]:
    """Where the answer's bytes start in the file, and the file's size where the answer says. A 206 must say
    (``Content-Range``) that it starts at ``offset``; a 200 is the whole file."""
    length = response.headers.get("Content-Length")
    length = int(length) if length is not None and length.isdigit() else None
    if response.status != 206:
        return 0, length
    match = _CONTENT_RANGE.fullmatch((response.headers.get("Content-Range") or "").strip())
    if not match or int(match.group(1)) != offset:
        return -1, None  # a range we did not ask for: not usable
    return offset, int(match.group(3)) if match.group(3) != "*" else None


def _open(url: str, offset: int, timeout: float):
    headers = {"User-Agent": USER_AGENT}
    if offset:
        headers["Range"] = f"bytes={offset}-"
    return urllib.request.urlopen(urllib.request.Request(url, headers=headers), timeout=timeout)


def _one_request(url: str, partial: Path, offset: int, watch: _Watch) -> tuple[int, int | None]:
    """One request for the bytes from ``offset`` on, appended to ``partial``; returns the part's size after it and
    the file's size (None where the host does not say). Raises on an HTTP error or a silence of ``watch.stall``
    seconds; a connection that ends early just returns fewer bytes."""
    try:
        response = _open(url, offset, watch.stall)
    except urllib.error.HTTPError as error:
        if error.code == 416 and offset:  # nothing after the part's end: complete, if the host's size agrees
            match = re.fullmatch(r"bytes \*/(\d+)", (error.headers.get("Content-Range") or "").strip())
            if match is None or int(match.group(1)) == offset:
                return offset, offset
            partial.unlink()  # longer than the file: not its bytes
            return 0, int(match.group(1))
        raise
    with response:
        start, total = _answer_start(response, offset)
        if start < 0:
            response.close()
            partial.unlink(missing_ok=True)
            return _one_request(url, partial, 0, watch)
        watch.start(start, total)
        with partial.open("ab" if start else "wb") as handle:
            with contextlib.suppress(http.client.IncompleteRead, ConnectionError):  # a drop: the caller resumes
                while chunk := response.read1(CHUNK_BYTES):  # what has arrived: kept if the host then stalls
                    handle.write(chunk)
                    handle.flush()  # on disk at once: a kill loses nothing that arrived
                    watch.received(len(chunk))
            handle.flush()
            os.fsync(handle.fileno())
    return partial.stat().st_size, total


def _fetch(url: str, partial: Path, offset: int, watch: _Watch, report: Callable[[str], None], name: str) -> None:
    """Fetch into ``partial`` until the host's size is reached (or, where it gives none, the connection ends),
    resuming each drop with a ``Range`` request."""
    host = urlsplit(url).netloc or url
    drops = 0
    while True:
        size, total = _one_request(url, partial, offset, watch)
        if total is None or size >= total:
            return
        drops = 0 if size > offset else drops + 1
        if drops >= DROPS_WITHOUT_PROGRESS:
            raise DownloadError(url, f"connection dropped {drops} times at {size:,} of {total:,} bytes")
        report(f"{name}: {host}: connection dropped at {size:,} of {total:,} bytes; resuming with Range")
        offset = size


def download(
    url: str,
    destination: Path,
    md5: str | None = None,
    *,
    sha256: str | None = None,
    progress: bool = True,
    report: Callable[[str], None] | None = None,
) -> Path:
    """Fetch ``url`` into ``destination``; resume ``destination.part`` if present; verify ``md5`` and ``sha256``
    when given. A failure is a :class:`DownloadError` (one line: host and HTTP status, silence or error; the part
    file is kept for the next try); on a checksum mismatch the part file is removed (its bytes are not trusted).
    ``report`` (default: a line on stderr) says each dropped connection that is resumed."""
    destination = Path(destination)
    expected = _expected(md5, sha256)
    if destination.is_file() and not _mismatches(destination, expected):
        return destination
    destination.parent.mkdir(parents=True, exist_ok=True)
    partial = part_path(destination)
    offset = _resumable_offset(destination, url, expected)
    atomic_write_json(part_record_path(destination), {"url": url, "expected": expected})
    stall = stall_seconds()
    watch = _Watch(destination.name, stall, progress)
    try:
        _fetch(url, partial, offset, watch, report or say, destination.name)
    except urllib.error.HTTPError as error:
        raise DownloadError(url, f"HTTP {error.code} {error.reason}") from None
    except TimeoutError:
        raise DownloadError(url, f"no data for {stall:g} s; abandoned") from None
    except (urllib.error.URLError, OSError, http.client.HTTPException) as error:
        reason = getattr(error, "reason", None) or error
        if isinstance(reason, TimeoutError):
            raise DownloadError(url, f"no answer for {stall:g} s; abandoned") from None
        raise DownloadError(
            url,
            str(reason),
            f"{url}: download failed ({reason}); check the connection or pass --archive with a copy you "
            f"downloaded yourself",
        ) from None
    finally:
        watch.close()
        if not partial.exists():  # nothing arrived: no record of it either
            part_record_path(destination).unlink(missing_ok=True)
    problems = _mismatches(partial, expected)
    if problems:
        partial.unlink()
        part_record_path(destination).unlink()
        raise DownloadError(
            url,
            f"checksum mismatch: {'; '.join(problems)}",
            f"{destination.name}: checksum mismatch for {url}: {'; '.join(problems)}; the partial file was "
            f"removed: run again to download afresh, or pass --archive with a copy you trust",
        )
    os.replace(partial, destination)
    part_record_path(destination).unlink(missing_ok=True)
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
