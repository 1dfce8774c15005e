"""The evaluation part's SOP-sized set and its comparison, on the CPU (the GPU half needs a GPU)."""

import numpy as np
import pytest

from dml_core.gpu_check.evaluation import (
    DIMENSIONS,
    SOP_TEST_CLASSES,
    SOP_TEST_ITEMS,
    compare_devices,
    integer_embeddings,
    sop_like_class_sizes,
)


def test_the_class_sizes_are_sops_counts_and_range():
    sizes = sop_like_class_sizes(SOP_TEST_ITEMS, SOP_TEST_CLASSES)
    assert len(sizes) == 11_316 and sizes.sum() == 60_502
    assert sizes.min() == 2 and sizes.max() <= 12 and 5 < sizes.mean() < 6
    assert np.array_equal(sizes, sop_like_class_sizes(SOP_TEST_ITEMS, SOP_TEST_CLASSES))  # seeded
    with pytest.raises(ValueError, match="cannot form"):
        sop_like_class_sizes(100, 60)


def test_the_embeddings_are_small_integers_so_every_distance_is_exact_in_fp32():
    embeddings, labels = integer_embeddings(items=600, classes=100)
    assert embeddings.dtype == np.float32 and embeddings.shape == (600, DIMENSIONS)
    assert np.array_equal(embeddings, np.round(embeddings)) and np.abs(embeddings).max() <= 2
    # the largest squared norm, and so every |product| and distance, stays far below 2**24
    assert (embeddings.astype(np.float64) ** 2).sum(axis=1).max() * 4 < 2**24
    assert np.array_equal(np.bincount(labels), sop_like_class_sizes(600, 100))


def test_the_comparison_runs_both_evaluations_lists_no_difference_on_one_device_and_times_the_bound():
    embeddings, labels = integer_embeddings(items=1_200, classes=200)  # SOP's K list needs over 1,000 items
    figures = compare_devices(embeddings, labels, "cpu")
    assert figures["differing"] == {}
    assert set(figures["cpu"]["metrics"]) == {"R@1", "R@10", "R@100", "R@1000", "MAP@R"}
    assert figures["device"]["metrics"] == figures["cpu"]["metrics"]
    assert 0 < figures["cpu"]["metrics"]["R@1"] < 100  # neither trivial nor hopeless
    assert figures["cpu"]["knn"]["device"] == "cpu" and figures["items"] == 1_200 and figures["classes"] == 200
    # the kNN stage over its bound (a bare GEMM + top-k on the same device), both timed
    assert figures["bound_seconds"] > 0 and figures["device"]["knn_seconds"] > 0
    assert figures["knn_over_bound"] == figures["device"]["knn_seconds"] / figures["bound_seconds"]
