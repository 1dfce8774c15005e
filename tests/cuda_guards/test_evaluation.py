"""The evaluation under the CUDA guard, its torch (device) path included: ``knn.host_arithmetic`` is the one switch
between numpy on the CPU and torch on CUDA, so turning it off runs CUDA's path on CPU tensors."""

import numpy as np
import pytest
import torch

from dml_core.evaluation import KMeansConfig, evaluate, knn
from dml_core.evaluation.knn import rank_neighbours
from tests.cuda_guards.cuda_kernels import CudaGuard

METRICS = ("recall", "map_at_r", "r_precision", "nmi", "f1")


def _embeddings() -> tuple[np.ndarray, np.ndarray]:
    """Integer-valued points (exact arithmetic: both paths compute the same distances, ties included)."""
    rng = np.random.default_rng(0)
    labels = np.repeat(np.arange(5), 6)
    points = rng.integers(-4, 5, size=(len(labels), 4)).astype(np.float32) + 3 * labels[:, None]
    return points, labels


@pytest.fixture
def device_path(monkeypatch):
    monkeypatch.setattr(knn, "host_arithmetic", lambda device: False)


def _evaluate(**masks):
    points, labels = _embeddings()
    config = KMeansConfig(backend="sklearn")
    return evaluate(points, labels, (1, 2, 4), metrics=METRICS, normalize=False, kmeans=config, device="cpu", **masks)


@pytest.mark.parametrize("protocol", ["single-set", "query-gallery"])
def test_the_device_path_runs_as_cuda_would_and_agrees_with_the_host_path(monkeypatch, protocol):
    query = np.arange(30) % 3 == 0
    masks = {"query_mask": query, "gallery_mask": ~query} if protocol == "query-gallery" else {}
    host = _evaluate(**masks)
    monkeypatch.setattr(knn, "host_arithmetic", lambda device: False)
    with CudaGuard() as guard:
        device = _evaluate(**masks)
    assert {"addmm", "topk", "sort"} <= guard.seen  # the torch search ran under the guard
    assert device.protocol["knn"]["search"].endswith("(torch)") and not host.protocol["knn"]["search"].endswith(
        "(torch)"
    )
    assert device.metrics == host.metrics and set(host.metrics) == {"R@1", "R@2", "R@4", "MAP@R", "RP", "NMI", "F1"}


def test_the_device_search_hands_numpy_only_host_copies(device_path):
    points, labels = (torch.as_tensor(array) for array in _embeddings())
    with CudaGuard(host_only_numpy=True):
        ranking = rank_neighbours(points, points, labels, labels, k=5, self_index=torch.arange(len(points)))
    assert ranking.neighbours.shape == (30, 5) and (ranking.first_positive_rank >= 0).all()
