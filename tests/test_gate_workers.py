"""The gate's parallel workers (tests/conftest.py): the files with slow tests go first, and the workers share the
cores instead of each taking two threads."""

from pathlib import Path
from types import SimpleNamespace

import pytest

from tests.conftest import slow_files_first, threads_per_worker


def _item(path: str, name: str, slow: bool = False) -> SimpleNamespace:
    def closest_marker(mark: str) -> str | None:
        return mark if mark == "slow" and slow else None

    return SimpleNamespace(path=Path(path), name=name, get_closest_marker=closest_marker)


def test_the_files_with_a_slow_test_go_first_each_whole_and_in_order():
    items = [_item("a.py", "a1"), _item("b.py", "b1"), _item("b.py", "b2", slow=True), _item("c.py", "c1"),
             _item("d.py", "d1", slow=True), _item("d.py", "d2")]  # fmt: skip
    assert [item.name for item in slow_files_first(items)] == ["b1", "b2", "d1", "d2", "a1", "c1"]


@pytest.mark.parametrize(
    ("cores", "workers", "threads"),
    [(2, 1, 2), (2, 2, 1), (1, 1, 1), (1, 2, 1), (16, 3, 2), (16, 16, 1), (3, 2, 1)],
)
def test_threads_share_the_cores_among_the_workers_at_most_two_each(cores, workers, threads):
    assert threads_per_worker(cores, workers) == threads
