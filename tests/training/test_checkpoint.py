"""Checkpoints: a round trip; free space checked before a write; a failed write, a damaged or foreign file each one
named line; half-written copies of killed runs removed on the next load or save."""

import errno

import pytest
import torch

from dml_core import atomic_io
from dml_core.atomic_io import owner_tag
from dml_core.errors import InputError, OutputError
from dml_core.training.checkpoint import load_checkpoint, save_checkpoint
from tests.test_atomic_io import dead_pid

STATE = {"recipe_sha256": "ab" * 32, "iteration": 7, "model": {"w": torch.arange(6.0)}, "rng": [1, 2]}


def _stale_copy(folder):
    path = folder / f".checkpoint.pt.{owner_tag().rsplit('-', 1)[0]}-{dead_pid()}.q1w2e3r4.tmp"
    path.write_bytes(b"\0" * 1000)
    return path


def test_round_trip(tmp_path):
    save_checkpoint(tmp_path / "checkpoint.pt", STATE)
    state = load_checkpoint(tmp_path / "checkpoint.pt")
    assert state["iteration"] == 7 and torch.equal(state["model"]["w"], torch.arange(6.0))


def test_not_enough_space_is_refused_before_writing_and_keeps_the_last_checkpoint(tmp_path, monkeypatch):
    save_checkpoint(tmp_path / "checkpoint.pt", STATE)
    usage = atomic_io.shutil.disk_usage(tmp_path)
    monkeypatch.setattr(atomic_io.shutil, "disk_usage", lambda _: usage._replace(free=4096))
    with pytest.raises(OutputError, match=rf"{tmp_path}: not enough free space to write checkpoint.pt: needs [\d,]+"):
        save_checkpoint(tmp_path / "checkpoint.pt", {**STATE, "iteration": 8})
    assert load_checkpoint(tmp_path / "checkpoint.pt")["iteration"] == 7
    assert [path.name for path in tmp_path.iterdir()] == ["checkpoint.pt"]


def test_a_failing_write_names_the_file_not_the_zip_writer(tmp_path, monkeypatch):
    def disk_full(fd):
        raise OSError(errno.ENOSPC, "No space left on device")

    monkeypatch.setattr(atomic_io.os, "fsync", disk_full)
    with pytest.raises(OutputError, match=rf"{tmp_path / 'checkpoint.pt'}: write failed \(No space left on device\)"):
        save_checkpoint(tmp_path / "checkpoint.pt", STATE)
    assert list(tmp_path.iterdir()) == []


@pytest.mark.parametrize("damage", ["truncated", "empty", "folder", "foreign"])
def test_a_damaged_or_foreign_checkpoint_is_one_named_line(tmp_path, damage):
    path = tmp_path / "checkpoint.pt"
    save_checkpoint(path, STATE)
    if damage == "truncated":
        path.write_bytes(path.read_bytes()[:500])
    elif damage == "empty":
        path.write_bytes(b"")
    elif damage == "folder":
        path.unlink()
        path.mkdir()
    else:
        torch.save({"w": torch.zeros(2)}, path)  # a weights file, not a training checkpoint
    with pytest.raises(InputError, match=rf"^{path}: ") as error:
        load_checkpoint(path)
    assert "\n" not in str(error.value)


def test_missing_checkpoint_is_named(tmp_path):
    with pytest.raises(InputError, match=r"checkpoint.pt: checkpoint not found"):
        load_checkpoint(tmp_path / "checkpoint.pt")


def test_half_written_copies_of_killed_runs_go_on_the_next_load_and_save(tmp_path):
    save_checkpoint(tmp_path / "checkpoint.pt", STATE)
    stale = _stale_copy(tmp_path)
    load_checkpoint(tmp_path / "checkpoint.pt")  # a resumed run starts here
    assert not stale.exists()
    stale = _stale_copy(tmp_path)
    save_checkpoint(tmp_path / "checkpoint.pt", STATE)
    assert [path.name for path in tmp_path.iterdir()] == ["checkpoint.pt"]
