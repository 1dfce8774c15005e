"""``prepare`` of a generated dataset by several processes at once (ranks of one run, local jobs)."""

import multiprocessing

import pytest

from dml_core.data.index import index_path, read_index
from dml_core.data.loading import load_split
from dml_core.data.prepare import prepare


def _prepare_and_load(root: str) -> int:
    prepare("embedded", root, progress=False)
    return len(load_split("embedded", root, "train").labels)


@pytest.mark.slow
def test_processes_generating_the_embedded_set_at_once_all_get_the_complete_set(tmp_path):
    (tmp_path / "embedded").mkdir()
    (tmp_path / "embedded" / "half-written.png").write_bytes(b"")  # a killed run's leftover, no index
    with multiprocessing.get_context("spawn").Pool(3) as pool:
        sizes = pool.map(_prepare_and_load, [str(tmp_path)] * 3)
    assert len(set(sizes)) == 1 and sizes[0] > 0
    assert index_path(tmp_path / "embedded").is_file() and read_index(tmp_path / "embedded")
    assert not (tmp_path / "embedded" / "half-written.png").exists()
    assert [path.name for path in tmp_path.iterdir()] == ["embedded"], "private folders are cleaned up"
