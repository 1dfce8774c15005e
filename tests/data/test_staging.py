"""All or nothing in a dataset folder: what a prepare put there is taken out unless committed, what it replaced is put
back, and a killed prepare's changes are undone by the next one from its journal."""

import os

import pytest

from dml_core.atomic_io import owner_tag
from dml_core.data.staging import Staging, undo_killed_prepares
from tests.test_atomic_io import dead_pid


def _entries(folder):
    return sorted(path.name for path in folder.iterdir())


def _folder_with_an_earlier_copy(tmp_path):
    folder = tmp_path / "cub200"
    (folder / "CUB_200_2011").mkdir(parents=True)
    (folder / "CUB_200_2011" / "images.txt").write_text("the earlier copy\n")
    (tmp_path / "staged" / "CUB_200_2011").mkdir(parents=True)
    (tmp_path / "staged" / "CUB_200_2011" / "images.txt").write_text("the new copy\n")
    (tmp_path / "staged" / "extra").mkdir()
    (tmp_path / "annotations.txt").write_text("1 1\n")
    (tmp_path / "linked").mkdir()
    return folder


def _stage_everything(stage, tmp_path):
    stage.move_in(tmp_path / "staged" / "CUB_200_2011")
    stage.move_in(tmp_path / "staged" / "extra")
    stage.copy(tmp_path / "annotations.txt")
    stage.link(tmp_path / "linked")


def test_a_failure_takes_out_what_was_added_and_puts_back_what_was_replaced(tmp_path):
    folder = _folder_with_an_earlier_copy(tmp_path)
    with pytest.raises(KeyboardInterrupt), Staging(folder) as stage:
        _stage_everything(stage, tmp_path)
        assert (folder / "CUB_200_2011" / "images.txt").read_text() == "the new copy\n"
        raise KeyboardInterrupt
    assert _entries(folder) == ["CUB_200_2011"]
    assert (folder / "CUB_200_2011" / "images.txt").read_text() == "the earlier copy\n"


def test_a_commit_keeps_every_change_and_nothing_of_the_bookkeeping(tmp_path):
    folder = _folder_with_an_earlier_copy(tmp_path)
    with Staging(folder) as stage:
        _stage_everything(stage, tmp_path)
        stage.commit()
    assert _entries(folder) == ["CUB_200_2011", "annotations.txt", "extra", "linked"]
    assert (folder / "CUB_200_2011" / "images.txt").read_text() == "the new copy\n"
    assert (folder / "linked").is_symlink()


def test_the_next_prepare_undoes_a_killed_ones_changes_from_its_journal(tmp_path):
    folder = _folder_with_an_earlier_copy(tmp_path)
    host = owner_tag().rsplit("-", 1)[0]
    killed = Staging(folder, f"{host}-{dead_pid()}")
    _stage_everything(killed, tmp_path)  # and then the process was killed: no commit, no undo
    live = Staging(folder, f"{host}-{os.getppid()}")  # a prepare still running elsewhere
    live.copy(tmp_path / "annotations.txt", "live.txt")
    undo_killed_prepares(folder)
    assert _entries(folder) == [live.journal.name, "CUB_200_2011", "live.txt"]
    assert (folder / "CUB_200_2011" / "images.txt").read_text() == "the earlier copy\n"
