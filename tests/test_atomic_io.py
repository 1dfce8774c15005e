"""Atomic writes: content lands whole, nothing is left behind, permissions follow the umask."""

import os

import pytest

from dml_core.atomic_io import atomic_write, atomic_write_json


def test_writes_json_with_normal_permissions(tmp_path):
    path = atomic_write_json(tmp_path / "sub" / "a.json", {"b": 1, "a": [1.5]})
    assert path.read_text() == '{\n  "a": [\n    1.5\n  ],\n  "b": 1\n}\n'
    umask = os.umask(0)
    os.umask(umask)
    assert path.stat().st_mode & 0o777 == 0o666 & ~umask


def test_a_failed_write_keeps_the_old_file_and_leaves_no_temporary(tmp_path):
    path = atomic_write_json(tmp_path / "a.json", {"v": 1})

    def explode(handle):
        handle.write(b"partial")
        raise RuntimeError("killed mid-write")

    with pytest.raises(RuntimeError):
        atomic_write(path, explode)
    assert path.read_text() == '{\n  "v": 1\n}\n'
    assert [p.name for p in tmp_path.iterdir()] == ["a.json"]


def test_nan_is_refused(tmp_path):
    with pytest.raises(ValueError):
        atomic_write_json(tmp_path / "a.json", {"v": float("nan")})
