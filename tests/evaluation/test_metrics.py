"""Pure metric functions on hand-computed cases and against scikit-learn."""

import numpy as np
import pytest
from sklearn.metrics import normalized_mutual_info_score
from sklearn.metrics.cluster import contingency_matrix

from dml_core.evaluation import metrics as M


def test_recall_at_k_leaves_out_queries_without_positive():
    assert M.recall_at_k(np.array([0, 2, 5, -1]), [1, 3, 6]) == {1: 1 / 3, 3: 2 / 3, 6: 1.0}


def test_map_at_r_hand_computed():
    # R=3: hits at ranks 1 and 3 -> (1/1 + 2/3) / 3.  R=1: miss -> 0.  R=2: hit at 2 -> (1/2)/2.
    hits = np.array([[1, 0, 1, 1], [0, 1, 0, 0], [0, 1, 1, 0]], dtype=bool)
    r = np.array([3, 1, 2])
    expected = np.mean([(1 + 2 / 3) / 3, 0.0, 0.25])
    assert M.map_at_r(hits, r) == pytest.approx(expected)
    assert M.r_precision(hits, r) == pytest.approx(np.mean([2 / 3, 0.0, 0.5]))


def test_map_at_r_ignores_queries_without_positive():
    hits = np.array([[1, 0], [0, 0]], dtype=bool)
    assert M.map_at_r(hits, np.array([1, 0])) == 1.0


def test_f1_hand_computed():
    # Classes {0,1,2},{3,4,5}; clusters {0,1},{2,3},{4,5}.
    labels = np.array([0, 0, 0, 1, 1, 1])
    clusters = np.array([0, 0, 1, 1, 2, 2])
    # TP pairs: (0,1),(4,5) = 2; predicted pairs = 3; actual pairs = 6.
    precision, recall = 2 / 3, 2 / 6
    assert M.clustering_f1(labels, clusters) == pytest.approx(2 * precision * recall / (precision + recall))


def test_f1_is_one_for_a_perfect_clustering_with_relabelled_ids():
    labels = np.array([3, 3, 7, 7, 9])
    assert M.clustering_f1(labels, np.array([1, 1, 0, 0, 2])) == 1.0


@pytest.mark.parametrize(("n", "classes", "clusters"), [(50, 3, 4), (500, 20, 20), (3000, 100, 90)])
def test_nmi_matches_scikit_learn(n, classes, clusters):
    rng = np.random.default_rng(n)
    labels = rng.integers(0, classes, n)
    assignment = np.where(rng.random(n) < 0.5, labels % clusters, rng.integers(0, clusters, n))
    ours = M.normalized_mutual_information(labels, assignment)
    assert ours == pytest.approx(normalized_mutual_info_score(labels, assignment), abs=1e-12)


@pytest.mark.parametrize(("n", "classes", "clusters"), [(1, 1, 1), (60, 4, 9), (2000, 100, 37)])
def test_the_contingency_table_is_scikit_learns_cell_for_cell_in_its_order(n, classes, clusters):
    """The same non-zero cells in the same row-major order, so NMI and F1 sum the same floats in the same order
    (bit for bit what they gave when they read scikit-learn's table); labels need not be 0..k-1."""
    rng = np.random.default_rng(n)
    labels, assignment = 1000 * rng.integers(-3, classes, n), rng.integers(0, clusters, n)
    theirs = contingency_matrix(labels, assignment, sparse=True).tocoo()
    ours = M.contingency(labels, assignment)
    assert ours.rows.tolist() == theirs.row.tolist() and ours.cols.tolist() == theirs.col.tolist()
    assert ours.counts.tolist() == theirs.data.tolist()
    assert ours.class_counts.tolist() == np.asarray(theirs.sum(1)).ravel().tolist()
    assert ours.cluster_counts.tolist() == np.asarray(theirs.sum(0)).ravel().tolist()
