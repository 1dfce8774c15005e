"""Exact neighbour ranking: self-exclusion by index, duplicates, the tie rule, chunking.

Every single-set fixture runs through both searches: the chunked one (``rank_neighbours``, CUDA's and
the query/gallery protocol's) and the CPU's symmetric one (``rank_within_set``).
"""

import numpy as np
import pytest
import torch

from dml_core.evaluation.knn import rank_neighbours, rank_within_set

SEARCHES = ["chunked", "symmetric"]


@pytest.fixture(params=SEARCHES)
def search(request):
    return request.param


def _rank(points, labels, k, query_gallery=None, chunk_rows=None, search="chunked"):
    x = torch.tensor(points, dtype=torch.float32).reshape(len(points), -1)
    y = torch.tensor(labels)
    if query_gallery is None and search == "symmetric":
        return rank_within_set(x, y, k)
    if query_gallery is None:
        return rank_neighbours(x, x, y, y, k, self_index=torch.arange(len(x)), chunk_rows=chunk_rows)
    q, g = query_gallery
    return rank_neighbours(x[q], x[g], y[q], y[g], k, chunk_rows=chunk_rows)


def test_exact_duplicate_is_kept_as_neighbour_not_dropped_as_self(search):
    # Items 0 and 1 are the same point; dropping "the first neighbour" would drop the twin, not self.
    ranking = _rank([0.0, 0.0, 5.0, 5.1], [0, 0, 1, 1], k=1, search=search)
    assert ranking.first_positive_rank.tolist() == [0, 0, 0, 0]
    assert ranking.neighbours[:, 0].tolist() == [1, 0, 3, 2]


def test_duplicate_of_another_class_ranks_before_the_positive(search):
    ranking = _rank([0.0, 0.0, 1.0, 9.0], [0, 1, 0, 1], k=1, search=search)
    # Query 0: its twin (class 1) at distance 0 comes first, its positive (item 2) second.
    assert ranking.first_positive_rank[0] == 1


@pytest.mark.parametrize(("labels", "expected_rank"), [([0, 1, 0], 1), ([0, 0, 1], 0)])
def test_equal_distances_are_ordered_by_gallery_index(labels, expected_rank, search):
    # Query 0 at 0; items 1 (+1) and 2 (-1) are equally far; item 1 has the smaller index.
    ranking = _rank([0.0, 1.0, -1.0], labels, k=2, search=search)
    assert ranking.neighbours[0].tolist() == [1, 2]
    assert ranking.first_positive_rank[0] == expected_rank


def test_boundary_tie_keeps_the_smaller_index_twin(search):
    # Query 0 at 0; five items at distance 1 (indices 1..5 alternating sides). k=2 must give [1, 2].
    points = [0.0, 1.0, -1.0, 1.0, -1.0, 1.0, 7.0]
    ranking = _rank(points, [0, 0, 0, 1, 1, 1, 1], k=2, search=search)
    assert ranking.neighbours[0].tolist() == [1, 2]
    assert ranking.neighbour_is_positive[0].tolist() == [True, True]


def test_negative_tied_with_the_nearest_positive_counts_only_when_its_index_is_smaller(search):
    # Query 3 at 0 (class 0): item 0 (class 1) and item 2 (class 0) both at distance 1.
    ranking = _rank([1.0, 5.0, -1.0, 0.0], [1, 1, 0, 0], k=1, search=search)
    assert ranking.first_positive_rank[3] == 1
    ranking = _rank([-1.0, 5.0, 1.0, 0.0], [0, 1, 1, 0], k=1, search=search)
    assert ranking.first_positive_rank[3] == 0


def test_singleton_class_has_no_positive(search):
    ranking = _rank([0.0, 1.0, 2.0], [0, 0, 1], k=1, search=search)
    assert ranking.first_positive_rank.tolist() == [0, 0, -1]
    assert ranking.num_positives.tolist() == [1, 1, 0]


def test_query_gallery_protocol_excludes_nothing():
    points = [0.0, 0.0, 3.0, 1.0, 4.0]
    labels = [0, 1, 0, 1, 0]
    ranking = _rank(points, labels, k=2, query_gallery=(np.array([0, 1]), np.array([2, 3, 4])))
    # Gallery (local indices): 0 -> 3.0 (class 0), 1 -> 1.0 (class 1), 2 -> 4.0 (class 0).
    assert ranking.neighbours.tolist() == [[1, 0], [1, 0]]
    assert ranking.first_positive_rank.tolist() == [1, 0]
    assert ranking.num_positives.tolist() == [2, 1]


def _brute_force(points, labels, k):
    """Reference: exact integer distances, stable sort by (distance, index), self removed."""
    d = ((points[:, None, :] - points[None, :, :]) ** 2).sum(-1)
    n = len(points)
    ranks, neighbours = [], []
    for i in range(n):
        order = [j for j in np.lexsort((np.arange(n), d[i])) if j != i]
        same = [labels[j] == labels[i] for j in order]
        ranks.append(same.index(True) if any(same) else -1)
        neighbours.append(order[:k])
    return np.array(ranks), np.array(neighbours)


@pytest.mark.parametrize("seed", [0, 1, 2])
def test_matches_brute_force_on_small_integer_grids_with_many_ties(seed, search):
    rng = np.random.default_rng(seed)
    points = rng.integers(-2, 3, size=(60, 2))  # 25 possible points: duplicates and ties everywhere
    labels = rng.integers(0, 6, size=60)
    ranks, neighbours = _brute_force(points, labels, k=7)
    ranking = _rank(points.astype(np.float32), labels, k=7, chunk_rows=7, search=search)
    np.testing.assert_array_equal(ranking.first_positive_rank, ranks)
    np.testing.assert_array_equal(ranking.neighbours, neighbours)
