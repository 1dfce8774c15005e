"""Parity with pytorch-metric-learning's AccuracyCalculator on random data of several sizes."""

import numpy as np
import pytest
import torch
from pytorch_metric_learning.utils.accuracy_calculator import AccuracyCalculator

from dml_core.evaluation import evaluate
from dml_core.evaluation.clustering import KMeansConfig, kmeans_assign


@pytest.mark.parametrize(("n", "dim", "classes"), [(60, 4, 6), (400, 16, 40), (1500, 32, 100)])
def test_single_set_parity(n, dim, classes):
    rng = np.random.default_rng(n)
    labels = rng.integers(0, classes, n)
    x = (rng.normal(size=(classes, dim))[labels] + 1.5 * rng.normal(size=(n, dim))).astype(np.float32)
    ours = evaluate(x, labels, (1,), normalize=False, kmeans=KMeansConfig(seed=1))
    assignment = kmeans_assign(x, len(np.unique(labels)), KMeansConfig(seed=1))
    calculator = AccuracyCalculator(
        include=("precision_at_1", "mean_average_precision_at_r", "r_precision", "NMI"),
        k="max_bin_count",
        device=torch.device("cpu"),
        kmeans_func=lambda query, n_clusters: torch.as_tensor(assignment),
    )
    theirs = calculator.get_accuracy(torch.as_tensor(x), torch.as_tensor(labels))
    assert ours.metrics["R@1"] == pytest.approx(100 * theirs["precision_at_1"], abs=1e-9)
    assert ours.metrics["MAP@R"] == pytest.approx(100 * theirs["mean_average_precision_at_r"], abs=1e-9)
    assert ours.metrics["RP"] == pytest.approx(100 * theirs["r_precision"], abs=1e-9)
    assert ours.metrics["NMI"] == pytest.approx(100 * theirs["NMI"], abs=1e-9)


def test_query_gallery_parity():
    rng = np.random.default_rng(7)
    labels = rng.integers(0, 30, 600)
    x = (rng.normal(size=(30, 8))[labels] + rng.normal(size=(600, 8))).astype(np.float32)
    query = np.zeros(600, bool)
    query[:250] = True
    ours = evaluate(
        x,
        labels,
        (1,),
        metrics=["recall", "map_at_r", "r_precision"],
        normalize=False,
        query_mask=query,
        gallery_mask=~query,
    )
    theirs = AccuracyCalculator(
        include=("precision_at_1", "mean_average_precision_at_r", "r_precision"),
        k="max_bin_count",
        device=torch.device("cpu"),
    ).get_accuracy(
        torch.as_tensor(x[query]),
        torch.as_tensor(labels[query]),
        torch.as_tensor(x[~query]),
        torch.as_tensor(labels[~query]),
    )
    assert ours.metrics["R@1"] == pytest.approx(100 * theirs["precision_at_1"], abs=1e-9)
    assert ours.metrics["MAP@R"] == pytest.approx(100 * theirs["mean_average_precision_at_r"], abs=1e-9)
    assert ours.metrics["RP"] == pytest.approx(100 * theirs["r_precision"], abs=1e-9)
