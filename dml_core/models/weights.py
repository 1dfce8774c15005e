"""Pretrained weight files: which files the suite knows, where it looks for them, how it checks them.

Every file is checked by its full sha256 before use (``WEIGHT_FILES`` records each published file's digest; an entry
whose full digest is not known checks the prefix torch hub puts in the file name, and ``WeightFile.verification``
says which). The lookup order, from a caller's path to a download, is ``resolve_weight_file``'s.
"""

from __future__ import annotations

import contextlib
import os
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from dml_core.atomic_io import atomic_write_json, read_json_object
from dml_core.data.catalog import CATALOG_VARIABLE, packaged_catalog, weight_urls
from dml_core.data.download import AllSourcesFailed, download, file_digests, first_that_downloads, say
from dml_core.errors import InputError
from dml_core.registry import Registry

RANDOM_INIT = "random init"
"""The weights identity recorded when a recipe or smoke mode asks for random initialisation."""


@dataclass(frozen=True)
class WeightFile:
    """A published weight file: its name, checksum, public source (``url``, then ``mirrors``) and the backbone it
    belongs to.

    ``sha256`` is the full hex digest when known, else the hex prefix printed in the file name.
    """

    file_name: str
    sha256: str
    url: str
    backbone: str
    note: str = ""
    mirrors: tuple[str, ...] = ()

    @property
    def urls(self) -> tuple[str, ...]:
        """Where the file is downloaded from, in the order tried: the catalog in use (``$DML_SOURCES`` may name
        another) where it lists this backbone, else the packaged catalog's URLs."""
        listed = weight_urls(self.backbone) if os.environ.get(CATALOG_VARIABLE) else ()
        return listed or (self.url, *self.mirrors)

    @property
    def verification(self) -> str:
        """``"full sha256"`` or ``"sha256 prefix"``: how strongly a passing check identifies the file."""
        return "full sha256" if len(self.sha256) == 64 else "sha256 prefix"


# The files come from the catalog of sources (dml_core/data/sources.yaml). Full digests: neither publisher prints
# one (only the prefix in the file name), so each is the digest recorded by public projects that download the file
# and check it before use: several independent ones for ResNet-50, two for GoogLeNet (one of them DARPA D3M's
# primitive installation manifest), one for BN-Inception. Each begins with the prefix its publisher put in the file
# name (8 or 9 hex digits), which a digest of any other file would match only by a 1-in-4e9 chance.
def _weight_files() -> dict[str, WeightFile]:
    files = {}
    for backbone, entry in packaged_catalog().weights.items():
        first, *others = [source.url for source in entry.sources]
        files[backbone] = WeightFile(entry.file, entry.sha256, first, backbone, entry.note, tuple(others))
    return files


_FILES = _weight_files()
WEIGHT_FILES: Registry[WeightFile] = Registry("backbone with a weight file", "model.backbone", _FILES)


def weights_cache_dir() -> Path:
    """The folder searched for weight files: ``$DML_WEIGHTS_DIR`` or ``~/.cache/dml/weights``."""
    configured = os.environ.get("DML_WEIGHTS_DIR")
    return Path(configured).expanduser() if configured else Path("~/.cache/dml/weights").expanduser()


def hub_checkpoints_dir() -> Path:
    """torch hub's folder of weight files (``torch.hub.get_dir()/checkpoints``: ``$TORCH_HOME/hub/checkpoints``,
    default ``~/.cache/torch/hub/checkpoints``), where torchvision's models save what they download: a GPU box that
    ran torchvision has GoogLeNet's and ResNet-50's files there."""
    import torch.hub  # here: the lookup is the only user, and ``dml weights --help`` stays light

    return Path(torch.hub.get_dir()) / "checkpoints"


def weight_file_places(expected: WeightFile) -> list[Path]:
    """Where ``expected`` is looked for, in order: the suite's folder (``$DML_WEIGHTS_DIR``), then torch hub's."""
    return [weights_cache_dir() / expected.file_name, hub_checkpoints_dir() / expected.file_name]


def find_weight_file(expected: WeightFile) -> Path | None:
    """The first of :func:`weight_file_places` that holds a file (not yet checked), or None."""
    return next((place for place in weight_file_places(expected) if place.is_file()), None)


def downloads_allowed() -> bool:
    """False when ``HF_HUB_OFFLINE`` or ``DML_OFFLINE`` is set to a true value: then no network is tried."""
    return not any(_env_flag(name) for name in ("HF_HUB_OFFLINE", "DML_OFFLINE"))


def _env_flag(name: str) -> bool:
    return os.environ.get(name, "").strip().lower() in {"1", "true", "yes", "on"}


def file_sha256(path: str | os.PathLike) -> str:
    """Hex sha256 of a file, read in chunks."""
    return file_digests(Path(path), ["sha256"])["sha256"]


SHA256_RECORDS = ".dml-sha256.json"
"""The file beside weight files that remembers their digests: ``{name: {size, mtime_ns, sha256}}``."""


def cached_file_sha256(path: str | os.PathLike) -> str:
    """:func:`file_sha256`, remembered in ``SHA256_RECORDS`` beside the file under its name, size and modification
    time, so a file is read and hashed once (docs/performance.md) and again only when it changes. Where that folder is
    read-only, or another tool's (torch hub's), nothing is remembered and the file is hashed every time (same
    verdict)."""
    path = Path(path)
    if path.parent.resolve() == hub_checkpoints_dir().resolve():
        return file_sha256(path)
    stat = path.stat()
    records_path = path.parent / SHA256_RECORDS
    try:
        records = read_json_object(records_path, "weight digest records")
    except InputError:  # none yet, or damaged: start afresh
        records = {}
    record = records.get(path.name)
    if (
        isinstance(record, dict)
        and record.get("size") == stat.st_size
        and record.get("mtime_ns") == stat.st_mtime_ns
        and isinstance(record.get("sha256"), str)
    ):
        return record["sha256"]
    digest = file_sha256(path)
    records[path.name] = {"size": stat.st_size, "mtime_ns": stat.st_mtime_ns, "sha256": digest}
    with contextlib.suppress(OSError):
        atomic_write_json(records_path, records)
    return digest


def verify_weight_file(path: str | os.PathLike, expected: WeightFile) -> str:
    """Check ``path`` against ``expected``'s sha256 (full, or the prefix where only that is known); return the
    file's full sha256.

    Raises ``InputError`` naming the file, the check made, the expected and the found digest when they differ.
    """
    if Path(path).is_dir():
        raise InputError(f"{path}: is a folder, expected the weight file {expected.file_name}")
    actual = cached_file_sha256(path)
    if not actual.startswith(expected.sha256.lower()):
        only_prefix = "" if len(expected.sha256) == 64 else ": its full digest is not known"
        raise InputError(
            f"{path}: sha256 does not match {expected.file_name} ({expected.verification} check{only_prefix}): "
            f"expected {expected.sha256}, found {actual}. The file is corrupt or a different model; "
            f"remove it and get the original from {', '.join(expected.urls)}"
        )
    return actual


def missing_weights_message(expected: WeightFile, looked_in: list[Path] | None = None) -> str:
    """The error text for a weight file that is not on this machine (``looked_in``: default, the usual places)."""
    places = ", ".join(str(place) for place in looked_in or weight_file_places(expected))
    return (
        f"weight file {expected.file_name} for backbone '{expected.backbone}' not found "
        f"(looked in: {places}). Expected sha256 {expected.sha256} ({expected.verification}). "
        f"Download it from {' or '.join(expected.urls)} and put it in {weights_cache_dir()} "
        "(or set DML_WEIGHTS_DIR, or pass its path). "
        f"Downloads are {'allowed' if downloads_allowed() else 'off (HF_HUB_OFFLINE or DML_OFFLINE is set)'}."
    )


def resolve_weight_file(expected: WeightFile, path: str | os.PathLike | None = None) -> tuple[Path, str]:
    """Find and verify a weight file; return ``(path, its full sha256)``.

    Lookup order: the explicit ``path`` the caller gives; the cache directory (``$DML_WEIGHTS_DIR``, default
    ``~/.cache/dml/weights``), then torch hub's (:func:`hub_checkpoints_dir`); only when downloads are allowed, the
    suite's downloader (progress, resume, sha256 check) from each URL the catalog of sources lists, in order, into
    the suite's folder. Offline (``HF_HUB_OFFLINE=1`` or
    ``DML_OFFLINE=1``) that step is skipped and the lookup fails at once with an error naming the file, its expected
    sha256, its public sources and where to put it.
    """
    if path is not None:
        explicit = Path(path).expanduser()
        if not explicit.is_file():
            raise InputError(missing_weights_message(expected, [explicit]))
        return explicit, verify_weight_file(explicit, expected)

    found = find_weight_file(expected)
    if found is not None:
        return found, verify_weight_file(found, expected)
    if not downloads_allowed():
        raise InputError(missing_weights_message(expected))
    cached = weights_cache_dir() / expected.file_name
    download_weight_file(expected, cached)
    try:
        return cached, verify_weight_file(cached, expected)
    except InputError:
        cached.unlink()  # a bad download must not sit in the cache looking like the real file
        raise


def download_weight_file(
    expected: WeightFile, destination: Path, *, progress: bool = True, report: Callable[[str], None] = say
) -> None:
    """Download through the suite's downloader from each known URL in order (progress, resume of a partial file,
    the full sha256 checked where known, atomic rename: never a half-written file); each failed URL is reported in
    one line. All failing is an ``InputError`` naming every URL tried and why."""
    full = expected.sha256 if expected.verification == "full sha256" else None
    try:
        first_that_downloads(
            expected.urls,
            lambda url: download(url, destination, sha256=full, progress=progress),
            expected.file_name,
            report,
        )
    except AllSourcesFailed as failed:
        message = missing_weights_message(expected)
        raise InputError(f"{message} Download failed: {failed}") from None


def weights_identity(weight_file: WeightFile, sha256: str) -> str:
    """The identity a results file records for loaded weights: file name and full sha256."""
    return f"{weight_file.file_name} sha256:{sha256}"
