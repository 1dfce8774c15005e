"""The catalog of sources (``sources.yaml`` beside this module): each dataset's published files and the routes that
serve them, each weight file's mirrors. One file as data, so a dead URL is one edited line, and ``DML_SOURCES``
can name a replacement of the same schema (an internal mirror).

The identity facts (published names and checksums) that every check uses are read from the packaged catalog; a
replacement catalog changes only where downloads come from and the checksums of those downloads.
"""

from __future__ import annotations

import datetime
import os
from functools import lru_cache
from pathlib import Path
from typing import Literal

from pydantic import Field, field_validator, model_validator

from dml_core.schema import StrictModel, load_yaml_model

PACKAGED_CATALOG = Path(__file__).with_name("sources.yaml")
CATALOG_VARIABLE = "DML_SOURCES"

Layout = Literal["cub", "cars-original", "cars-devkit", "cars-kaggle", "sop", "inshop"]
_HEX = {"md5": 32, "sha256": 64}


def _check_hex(value: str | None, algorithm: str) -> str | None:
    if value is not None and (len(value) != _HEX[algorithm] or any(c not in "0123456789abcdef" for c in value)):
        raise ValueError(f"expected {_HEX[algorithm]} lowercase hex digits for {algorithm}")
    return value


class Checksums(StrictModel):
    md5: str | None = None
    sha256: str | None = None

    @field_validator("md5")
    @classmethod
    def _md5(cls, value: str | None) -> str | None:
        return _check_hex(value, "md5")

    @field_validator("sha256")
    @classmethod
    def _sha256(cls, value: str | None) -> str | None:
        return _check_hex(value, "sha256")


class PublishedFile(Checksums):
    """A file the dataset's authors published, its checksum and the public evidence for it. A copy that differs is
    refused where the evidence is public (``gates``); a checksum no public source gives (``gates: false``) is only
    compared and reported, and the content checks carry the copy's identity."""

    file: str
    holds: str
    evidence: str
    gates: bool = True
    unpacks_to: str | None = None

    @model_validator(mode="after")
    def _has_a_checksum(self) -> PublishedFile:
        if self.md5 is None and self.sha256 is None:
            raise ValueError(f"{self.file}: a published file needs its md5 or sha256")
        return self


class SourceFile(Checksums):
    """One download of a route: the name it is saved under, its URL and, where known, the checksum of its bytes."""

    file: str
    url: str


class Source(StrictModel):
    """A download route, tried as a whole: every file it lists."""

    name: str
    layout: Layout
    last_known_working: datetime.date | None
    evidence: str
    files: list[SourceFile] = Field(min_length=1)


class ManualRoute(StrictModel):
    """A route that needs a person (a login, a clone): its commands, then what to pass as ``--archive``."""

    name: str
    layout: Layout
    last_known_working: datetime.date | None
    evidence: str
    steps: list[str] = Field(min_length=1)
    archives: list[str] = Field(min_length=1)


class DatasetSources(StrictModel):
    published: list[PublishedFile]
    sources: list[Source]
    manual: list[ManualRoute]

    def published_file(self, name: str) -> PublishedFile | None:
        return next((known for known in self.published if known.file == name), None)


class WeightSource(StrictModel):
    url: str
    last_known_working: datetime.date | None
    evidence: str


class WeightEntry(StrictModel):
    file: str
    sha256: str
    evidence: str  # where the full sha256 comes from
    note: str
    sources: list[WeightSource] = Field(min_length=1)

    @field_validator("sha256")
    @classmethod
    def _full_sha256(cls, value: str) -> str:
        return _check_hex(value, "sha256")


class Catalog(StrictModel):
    datasets: dict[str, DatasetSources]
    weights: dict[str, WeightEntry]


def catalog_path() -> Path:
    """The catalog in use: ``$DML_SOURCES`` when set, else the packaged ``sources.yaml``."""
    configured = os.environ.get(CATALOG_VARIABLE, "").strip()
    return Path(configured).expanduser() if configured else PACKAGED_CATALOG


def load_catalog(path: Path | None = None) -> Catalog:
    """The catalog at ``path`` (default: :func:`catalog_path`); a bad file is an ``InputError`` naming it and the
    field. Parsed once per file version."""
    path = Path(path or catalog_path())
    try:
        stat = path.stat()
    except OSError:
        return _load(path, -1, -1)  # the loader words the missing file
    return _load(path, stat.st_size, stat.st_mtime_ns)


@lru_cache(maxsize=4)
def _load(path: Path, size: int, mtime_ns: int) -> Catalog:
    what = "catalog of sources" + (f" (from ${CATALOG_VARIABLE})" if path != PACKAGED_CATALOG else "")
    return load_yaml_model(path, Catalog, what)


def packaged_catalog() -> Catalog:
    """The catalog shipped with the suite: the identity facts (published names and checksums) come from it."""
    return load_catalog(PACKAGED_CATALOG)


def dataset_sources(dataset: str) -> DatasetSources:
    """The routes of ``dataset`` in the catalog in use (none listed: no published files, no routes)."""
    return load_catalog().datasets.get(dataset) or DatasetSources(published=[], sources=[], manual=[])


def weight_urls(backbone: str) -> tuple[str, ...]:
    """The URLs the catalog in use lists for ``backbone``'s weight file, in the order they are tried."""
    entry = load_catalog().weights.get(backbone)
    return tuple(source.url for source in entry.sources) if entry else ()
