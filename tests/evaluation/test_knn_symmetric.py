"""The CPU's symmetric single-set search against the chunked search and a brute-force oracle."""

import subprocess
import sys
import textwrap

import numpy as np
import pytest
import torch

from dml_core.evaluation import evaluate
from dml_core.evaluation.knn import CHUNKED_SEARCH, SYMMETRIC_MAX_K, SYMMETRIC_SEARCH, rank_neighbours, rank_within_set
from dml_core.evaluation.knn_symmetric import class_blocks, rank_symmetric
from tests.processes import completed_report


def _chunked(x, y, k):
    xt, yt = torch.from_numpy(x), torch.from_numpy(y)
    ranking = rank_neighbours(xt, xt, yt, yt, k, self_index=torch.arange(len(x)), chunk_rows=5)
    return ranking.first_positive_rank, ranking.neighbours


def _integer_grid(seed, n, dims, classes):
    rng = np.random.default_rng(seed)
    # Few distinct points: exact duplicates and equal distances everywhere, and exact fp32 arithmetic,
    # so both searches must agree bit for bit.
    x = rng.integers(-2, 3, size=(n, dims)).astype(np.float32)
    y = rng.integers(0, classes, size=n)
    return x, y


@pytest.mark.parametrize("block_rows", [1, 3, 17, 10_000])
@pytest.mark.parametrize("seed", range(6))
def test_equals_the_chunked_search_on_integer_grids_at_any_block_size(seed, block_rows):
    rng = np.random.default_rng(100 + seed)
    x, y = _integer_grid(seed, int(rng.integers(2, 150)), int(rng.integers(1, 4)), int(rng.integers(1, 30)))
    k = int(np.bincount(y).max() - 1)
    first, neighbours = rank_symmetric(x, y, k, block_rows=block_rows)
    expected_first, expected_neighbours = _chunked(x, y, k)
    np.testing.assert_array_equal(first, expected_first)
    np.testing.assert_array_equal(neighbours, expected_neighbours)


def test_without_neighbours_only_ranks_are_computed():
    x, y = _integer_grid(7, 80, 2, 9)
    first, neighbours = rank_symmetric(x, y, 0, block_rows=10)
    np.testing.assert_array_equal(first, _chunked(x, y, 0)[0])
    assert neighbours.shape == (80, 0)


def test_a_class_larger_than_a_block_becomes_one_block():
    labels = np.array([0] * 5 + [1] * 2 + [2] * 6)
    assert class_blocks(labels, block_rows=3) == [(0, 5), (5, 13)]
    assert class_blocks(labels, block_rows=100) == [(0, 13)]
    x, _ = _integer_grid(3, 13, 2, 1)
    first, neighbours = rank_symmetric(x, labels, 4, block_rows=3)
    expected_first, expected_neighbours = _chunked(x, labels, 4)
    np.testing.assert_array_equal(first, expected_first)
    np.testing.assert_array_equal(neighbours, expected_neighbours)


def test_equals_the_chunked_search_on_random_embeddings():
    rng = np.random.default_rng(0)
    x = rng.standard_normal((700, 32)).astype(np.float32)
    x /= np.linalg.norm(x, axis=1, keepdims=True)
    y = rng.integers(0, 90, size=700)
    k = int(np.bincount(y).max() - 1)
    first, neighbours = rank_symmetric(x, y, k, block_rows=64)
    expected_first, expected_neighbours = _chunked(x, y, k)
    np.testing.assert_array_equal(first, expected_first)
    np.testing.assert_array_equal(neighbours, expected_neighbours)


def test_a_forked_child_can_search_after_its_parent_did():
    # numba's default threading layer here would be GNU OpenMP, under which this child is terminated.
    script = textwrap.dedent(
        """
        import os
        import numpy as np
        from dml_core.evaluation.knn_symmetric import rank_symmetric
        x = np.random.default_rng(0).standard_normal((400, 8)).astype(np.float32)
        y = np.arange(400) % 40
        parent = rank_symmetric(x, y, 9, block_rows=50)[0]
        pid = os.fork()
        if pid == 0:
            child = rank_symmetric(x, y, 9, block_rows=50)[0]
            os._exit(0 if np.array_equal(child, parent) else 3)
        _, status = os.waitpid(pid, 0)
        raise SystemExit(os.waitstatus_to_exitcode(status))
        """
    )
    env = {k: v for k, v in __import__("os").environ.items() if k != "NUMBA_THREADING_LAYER"}
    result = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, timeout=120, env=env)
    assert result.returncode == 0, completed_report(result)


def test_the_cpu_single_set_search_is_symmetric_up_to_the_k_limit_then_chunked():
    rng = np.random.default_rng(1)
    x = torch.from_numpy(rng.integers(-2, 3, size=(300, 2)).astype(np.float32))
    small_classes = torch.from_numpy(np.arange(300) % 60)
    two_classes = torch.from_numpy(np.arange(300) % 2)
    assert rank_within_set(x, small_classes, k=4).search == SYMMETRIC_SEARCH
    large_k = rank_within_set(x, two_classes, k=SYMMETRIC_MAX_K + 1)
    assert large_k.search.startswith(CHUNKED_SEARCH)
    first, neighbours = _chunked(x.numpy(), two_classes.numpy(), SYMMETRIC_MAX_K + 1)
    np.testing.assert_array_equal(large_k.first_positive_rank, first)
    np.testing.assert_array_equal(large_k.neighbours, neighbours)


def test_the_evaluation_records_which_search_ran():
    rng = np.random.default_rng(2)
    x, y = rng.standard_normal((120, 8)).astype(np.float32), np.arange(120) % 12
    single_set = evaluate(x, y, (1, 2), device="cpu")
    query_gallery = evaluate(
        x, y, (1, 2), device="cpu", query_mask=np.arange(120) < 60, gallery_mask=np.arange(120) >= 60
    )
    assert single_set.protocol["knn"]["search"] == SYMMETRIC_SEARCH
    assert query_gallery.protocol["knn"]["search"].startswith(CHUNKED_SEARCH)


def test_it_uses_as_many_threads_as_torch(monkeypatch):
    import numba

    x, y = _integer_grid(5, 90, 2, 9)
    expected = _chunked(x, y, 5)
    monkeypatch.setattr(torch, "get_num_threads", lambda: 1)
    first, neighbours = rank_symmetric(x, y, 5, block_rows=10)
    assert numba.get_num_threads() == 1
    np.testing.assert_array_equal(first, expected[0])
    np.testing.assert_array_equal(neighbours, expected[1])
