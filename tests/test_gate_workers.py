"""The gate's parallel workers (tests/conftest.py) share the cores instead of each taking two threads."""

import pytest

from tests.conftest import threads_per_worker


@pytest.mark.parametrize(
    ("cores", "workers", "threads"),
    [(2, 1, 2), (2, 2, 1), (1, 1, 1), (1, 2, 1), (16, 3, 2), (16, 16, 1), (3, 2, 1)],
)
def test_threads_share_the_cores_among_the_workers_at_most_two_each(cores, workers, threads):
    assert threads_per_worker(cores, workers) == threads
