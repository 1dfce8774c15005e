"""Atomic writes: content lands whole, nothing is left behind, permissions follow the umask; killed writers'
temporaries are removed by the next writer; a full disk or an unwritable place is one named OutputError."""

import errno
import os
import shutil
import subprocess
import sys
import time
from pathlib import Path

import pytest

from dml_core import atomic_io
from dml_core.atomic_io import (
    atomic_write,
    atomic_write_bytes,
    atomic_write_json,
    owner_tag,
    read_json_object,
    remove_stale_temporaries,
)
from dml_core.errors import InputError, OutputError


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


def dead_pid() -> int:
    """The pid of a process that has just exited (a killed writer's, as far as its leftovers can tell)."""
    process = subprocess.Popen([sys.executable, "-c", "pass"])
    process.wait()
    return process.pid


def test_a_killed_writers_temporary_is_removed_by_the_next_write(tmp_path):
    stale = tmp_path / f".results.json.{owner_tag().rsplit('-', 1)[0]}-{dead_pid()}.k3j4h5g6.tmp"
    stale.write_bytes(b"half a file")
    atomic_write_json(tmp_path / "results.json", {"v": 1})
    assert sorted(path.name for path in tmp_path.iterdir()) == ["results.json"]


def test_temporaries_of_live_writers_other_hosts_and_other_files_are_kept(tmp_path):
    host = owner_tag().rsplit("-", 1)[0]
    kept = [
        f".results.json.{host}-{os.getppid()}.aaaaaaaa.tmp",  # a live process on this host
        f".results.json.{owner_tag()}.bbbbbbbb.tmp",  # this very process
        f".results.json.elsewhere-{dead_pid()}.cccccccc.tmp",  # another host: its pids are not ours to judge
        f".other.json.{host}-{dead_pid()}.dddddddd.tmp",  # another file's
        ".results.json.zzzzzzzz.tmp",  # untagged, but newer than this process
    ]
    for name in kept:
        (tmp_path / name).write_bytes(b"x")
    atomic_write_json(tmp_path / "results.json", {"v": 1})
    assert sorted(path.name for path in tmp_path.iterdir()) == sorted([*kept, "results.json"])


def test_an_untagged_temporary_older_than_this_process_is_removed(tmp_path):
    old = tmp_path / ".results.json.k3j4h5g6.tmp"  # named before owner tags
    old.write_bytes(b"x")
    os.utime(old, (time.time() - 3600, time.time() - 3600))
    assert remove_stale_temporaries(tmp_path, ".results.json.", ".tmp") == [old]
    assert not old.exists()


def test_a_full_disk_is_refused_before_writing_naming_the_folder_and_sizes(tmp_path, monkeypatch):
    usage = shutil.disk_usage(tmp_path)
    monkeypatch.setattr(atomic_io.shutil, "disk_usage", lambda _: usage._replace(free=1000))
    with pytest.raises(
        OutputError, match=rf"{tmp_path}: not enough free space to write a.bin: needs [\d,]+ bytes .* 1,000 free"
    ):
        atomic_write_bytes(tmp_path / "a.bin", b"x" * 10)
    assert list(tmp_path.iterdir()) == []


def test_a_failed_write_is_an_output_error_naming_the_file(tmp_path):
    def disk_full(handle):
        raise OSError(errno.ENOSPC, "No space left on device")

    with pytest.raises(OutputError, match=rf"{tmp_path / 'a.bin'}: write failed \(No space left on device\)"):
        atomic_write(tmp_path / "a.bin", disk_full)
    assert list(tmp_path.iterdir()) == []


def test_a_file_in_the_way_of_the_folder_is_an_output_error(tmp_path):
    (tmp_path / "out").write_text("not a folder")
    with pytest.raises(OutputError, match=r"out/a.json: cannot write here"):
        atomic_write_json(tmp_path / "out" / "a.json", {})


@pytest.mark.parametrize(
    ("content", "message"),
    [(b"", r"not valid JSON"), (b"\xff\xfe\x00binary", r"not valid JSON \(not UTF-8 text\)"), (None, r"is a folder")],
)
def test_unreadable_json_objects_are_one_named_line(tmp_path, content, message):
    path = tmp_path / "results.json"
    if content is None:
        path.mkdir()
    else:
        path.write_bytes(content)
    with pytest.raises(InputError, match=rf"{path}: {message}"):
        read_json_object(path, "results file")


def test_the_nearest_existing_place_is_the_path_itself_or_the_ancestor_it_would_be_created_in(tmp_path, monkeypatch):
    existing = tmp_path / "file.txt"
    existing.write_text("x")
    assert atomic_io.nearest_existing(existing) == existing
    assert atomic_io.nearest_existing(tmp_path / "a" / "b" / "c.json") == tmp_path
    monkeypatch.chdir(tmp_path)
    assert atomic_io.nearest_existing(Path("new") / "run") == tmp_path
