"""Pretrained weight files: which files the suite knows, where it looks for them, how it checks them.

Lookup order for a backbone's pretrained weights (``resolve_weight_file``):

1. an explicit path the caller gives;
2. the cache directory: ``$DML_WEIGHTS_DIR``, default ``~/.cache/dml/weights``;
3. only when downloads are allowed: ``torch.hub.download_url_to_file`` from the public source into that cache.
   Offline (``HF_HUB_OFFLINE=1`` or ``DML_OFFLINE=1``) step 3 is skipped and the lookup fails at once with an
   error naming the file, its expected sha256, its public source and where to put it.

Every file is checked by its full sha256 before use (``WEIGHT_FILES`` records the digest of each published file).
The torch-hub convention puts the first hex digits of the sha256 in the file name (``resnet50-0676ba61.pth``); an
entry whose full digest is not known records only that prefix, and ``WeightFile.verification`` says which of the
two a check did. Hashing a 100 MB file takes a second or two, so the digest is remembered beside the file, keyed by
its name, size and modification time (:func:`cached_file_sha256`): a changed file is hashed again.
"""

from __future__ import annotations

import contextlib
import hashlib
import os
from dataclasses import dataclass
from pathlib import Path

from torch.hub import download_url_to_file

from dml_core.atomic_io import atomic_write_json, read_json_object
from dml_core.errors import InputError
from dml_core.registry import Registry

RANDOM_INIT = "random init"
"""The weights identity recorded when a recipe or smoke mode asks for random initialisation."""


@dataclass(frozen=True)
class WeightFile:
    """A published weight file: its name, checksum, public source and the backbone it belongs to.

    ``sha256`` is the full hex digest when known, else the hex prefix printed in the file name.
    """

    file_name: str
    sha256: str
    url: str
    backbone: str
    note: str = ""

    @property
    def verification(self) -> str:
        """``"full sha256"`` or ``"sha256 prefix"``: how strongly a passing check identifies the file."""
        return "full sha256" if len(self.sha256) == 64 else "sha256 prefix"


# Full digests of the published files. Neither publisher prints one (only the prefix in the file name), so each
# is the digest recorded by public projects that download the file and check it before use: several independent
# ones for ResNet-50, two for GoogLeNet (one of them DARPA D3M's primitive installation manifest), one for
# BN-Inception. Each begins with the prefix its publisher put in the file name (8 or 9 hex digits), which a digest
# of any other file would match only by a 1-in-4e9 chance.
_FILES: dict[str, WeightFile] = {
    "bn_inception": WeightFile(
        file_name="bn_inception-52deb4733.pth",
        sha256="52deb473314542a5c2f87e9e6f26f4ca42fe863d15f986414dbae8c2dfdd2353",
        url="http://data.lip6.fr/cadene/pretrainedmodels/bn_inception-52deb4733.pth",
        backbone="bn_inception",
        note="Caffe-ported ImageNet BN-Inception (Cadene's pretrainedmodels, MIT licence)",
    ),
    "googlenet": WeightFile(
        file_name="googlenet-1378be20.pth",
        sha256="1378be20a8e875cf1568b8a71654e704449655e34711a959a38b04fb34905cef",
        url="https://download.pytorch.org/models/googlenet-1378be20.pth",
        backbone="googlenet",
        note="torchvision GoogLeNet_Weights.IMAGENET1K_V1 (ported from TensorFlow, BSD-3)",
    ),
    "resnet50": WeightFile(
        file_name="resnet50-0676ba61.pth",
        sha256="0676ba61b6795bbe1773cffd859882e5e297624d384b6993f7c9e683e722fb8a",
        url="https://download.pytorch.org/models/resnet50-0676ba61.pth",
        backbone="resnet50",
        note="torchvision ResNet50_Weights.IMAGENET1K_V1 = timm 'resnet50.tv_in1k' (BSD-3)",
    ),
}
WEIGHT_FILES: Registry[WeightFile] = Registry("backbone with a weight file", "model.backbone", _FILES)


def weights_cache_dir() -> Path:
    """The folder searched for weight files: ``$DML_WEIGHTS_DIR`` or ``~/.cache/dml/weights``."""
    configured = os.environ.get("DML_WEIGHTS_DIR")
    return Path(configured).expanduser() if configured else Path("~/.cache/dml/weights").expanduser()


def downloads_allowed() -> bool:
    """False when ``HF_HUB_OFFLINE`` or ``DML_OFFLINE`` is set to a true value: then no network is tried."""
    return not any(_env_flag(name) for name in ("HF_HUB_OFFLINE", "DML_OFFLINE"))


def _env_flag(name: str) -> bool:
    return os.environ.get(name, "").strip().lower() in {"1", "true", "yes", "on"}


def file_sha256(path: str | os.PathLike) -> str:
    """Hex sha256 of a file, read in 1 MiB chunks."""
    digest = hashlib.sha256()
    with open(path, "rb") as handle:
        for chunk in iter(lambda: handle.read(1 << 20), b""):
            digest.update(chunk)
    return digest.hexdigest()


SHA256_RECORDS = ".dml-sha256.json"
"""The file beside weight files that remembers their digests: ``{name: {size, mtime_ns, sha256}}``."""


def cached_file_sha256(path: str | os.PathLike) -> str:
    """:func:`file_sha256`, remembered in ``SHA256_RECORDS`` beside the file under its name, size and modification
    time, so a file is hashed once and again only when it changes. Where that folder is read-only nothing is
    remembered and the file is hashed every time (same verdict)."""
    path = Path(path)
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
            f"get the original from {expected.url}"
        )
    return actual


def missing_weights_message(expected: WeightFile, looked_in: list[Path]) -> str:
    """The error text for a weight file that is not on this machine."""
    places = ", ".join(str(place) for place in looked_in)
    return (
        f"weight file {expected.file_name} for backbone '{expected.backbone}' not found "
        f"(looked in: {places}). Expected sha256 {expected.sha256} ({expected.verification}). "
        f"Download it from {expected.url} and put it in {weights_cache_dir()} "
        "(or set DML_WEIGHTS_DIR, or pass its path). "
        f"Downloads are {'allowed' if downloads_allowed() else 'off (HF_HUB_OFFLINE or DML_OFFLINE is set)'}."
    )


def resolve_weight_file(expected: WeightFile, path: str | os.PathLike | None = None) -> tuple[Path, str]:
    """Find and verify a weight file in the module's lookup order; return ``(path, its full sha256)``."""
    if path is not None:
        explicit = Path(path).expanduser()
        if not explicit.is_file():
            raise InputError(missing_weights_message(expected, [explicit]))
        return explicit, verify_weight_file(explicit, expected)

    cached = weights_cache_dir() / expected.file_name
    if cached.is_file():
        return cached, verify_weight_file(cached, expected)
    if not downloads_allowed():
        raise InputError(missing_weights_message(expected, [cached]))
    download_weight_file(expected, cached)
    try:
        return cached, verify_weight_file(cached, expected)
    except InputError:
        cached.unlink()  # a bad download must not sit in the cache looking like the real file
        raise


def download_weight_file(expected: WeightFile, destination: Path) -> None:
    """Download through torch.hub into ``destination`` (temp file + rename: never a half-written file)."""

    destination.parent.mkdir(parents=True, exist_ok=True)
    try:
        download_url_to_file(expected.url, str(destination), hash_prefix=None, progress=False)
    except Exception as error:  # network errors come in many types; the user needs one actionable line
        message = missing_weights_message(expected, [destination])
        raise InputError(f"{message} Download failed: {error}") from error


def weights_identity(weight_file: WeightFile, sha256: str) -> str:
    """The identity a results file records for loaded weights: file name and full sha256."""
    return f"{weight_file.file_name} sha256:{sha256}"
