"""The evaluation benchmark's device figures, run on CPU tensors (the gate has no GPU): the bound does the search's
work (the same neighbours), the device path (the torch search, forced on the CPU) gives the CPU path's metrics on
exact data, and the report's ratios are the seconds' quotients."""

import numpy as np
import pytest
import torch

from dml_core.evaluation.knn import rank_neighbours
from dml_core.gpu_check.evaluation import bound_gemm_topk, differing_metrics, integer_embeddings
from tests.benchmarks.device_evaluation import (
    DEVICE_TARGETS,
    device_report,
    device_retrieval,
    missed_targets,
)


def test_the_bound_finds_the_searchs_neighbours():
    # Rows of equal norm (permutations of 1, 2, 4, ..., 128): the largest products are the smallest distances, all
    # integers, so exact; no row has ties among its nearest k + 2 (checked), so the order is the search's own.
    rng = np.random.default_rng(0)
    x = torch.as_tensor(np.stack([rng.permutation(2 ** np.arange(8)) for _ in range(40)]), dtype=torch.float32)
    k = 4
    products = (x @ x.T).sort(dim=1, descending=True).values[:, : k + 2]
    assert bool((products[:, 1:] != products[:, :-1]).all())
    found = bound_gemm_topk(x, k + 1, chunk_rows=7)  # chunks that do not divide the rows
    index = torch.arange(len(x))
    ranking = rank_neighbours(x, x, index, index, k, self_index=index)
    assert found.shape == (40, k + 1) and torch.equal(found[:, 0], index)  # itself first, then its neighbours
    assert np.array_equal(found[:, 1:].numpy(), ranking.neighbours)


def test_the_device_path_gives_the_cpu_paths_metrics_on_exact_data(monkeypatch):
    x, y = integer_embeddings(items=600, classes=100, dimensions=32)
    cpu = device_retrieval(x, y, (1, 10, 100), "cpu")
    monkeypatch.setattr("dml_core.evaluation.knn.host_arithmetic", lambda device: False)  # the torch (CUDA) search
    torch_search = device_retrieval(x, y, (1, 10, 100), "cpu")
    assert cpu.protocol["knn"]["search"].startswith("symmetric")
    assert torch_search.protocol["knn"]["search"] == "chunked over queries, one GEMM per chunk (torch)"
    assert set(cpu.metrics) == {"R@1", "R@10", "R@100", "MAP@R", "RP"}
    assert differing_metrics(torch_search.metrics, cpu.metrics) == {}
    assert torch_search.metrics == cpu.metrics


def test_the_report_divides_the_seconds_and_names_the_missed_targets():
    measured = {"device_knn_stage": 2.6, "device_bound_knn": 2.0, "ours_knn_stage": 13.0, "device_total": 3.0}
    differing = {"MAP@R": (10.0, 10.5)}
    report = device_report(measured, torch.device("cpu"), {"n": 10, "dim": 4, "classes": 2}, differing)
    assert report["ratios"] == pytest.approx(
        {"device_knn_stage / device_bound_knn": 1.3, "ours_knn_stage / device_knn_stage": 5.0}
    )
    assert report["targets (at most)"] == DEVICE_TARGETS == {"device_knn_stage / device_bound_knn": 1.3}
    assert report["metrics differing from the CPU path's (device, CPU)"] == differing
    assert report["device"].startswith("cpu ") and report["seconds"] == measured
    assert missed_targets(report["ratios"], DEVICE_TARGETS) == {}
    slower = device_report({**measured, "device_knn_stage": 2.8}, torch.device("cpu"), {}, {})
    assert missed_targets(slower["ratios"], DEVICE_TARGETS) == {"device_knn_stage / device_bound_knn": "1.40 > 1.3"}
