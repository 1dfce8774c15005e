"""The evaluation benchmark's device figures (``bench_evaluation.py`` on CUDA), written as functions of the device so
that the gate runs them on CPU tensors (``test_device_evaluation.py``).

What is measured on the GPU, in the same run as the CPU figures:
- ours: ``evaluate()`` with the retrieval metrics (Recall@K, MAP@R, R-Precision) on the device: its kNN stage
  (the chunked search: ``||g||^2 - 2 q.g`` by ``addmm``, self-exclusion, first-positive rank, ordered top-k, TF32
  off), from host embeddings to host metrics;
- bound: the bare work of that stage on the same GPU, with the embeddings already there: per chunk of queries (the
  search's own chunk size) one GEMM against every item and ``torch.topk`` of the same k
  (``gpu_check.evaluation.bound_gemm_topk``, which the GPU check's evaluation part times too). Target: the kNN
  stage at most ``DEVICE_TARGETS`` times it.
The metrics on the device are compared with the CPU path's of the same run and every difference is written down:
on these random float embeddings two distances equal to the last bit can swap between the two searches
(docs/evaluation.md), so this is a record; exactness is checked on integer-valued data, where every distance is
exact (the GPU check's evaluation part, and on CPU tensors the gate).

NMI and F1 are not moved to the device: the clustering stage stays faiss' CPU k-means (``KMeansConfig``'s default),
because the published comparisons rest on its numbers. A torch k-means on the device would draw other initial
centroids and treat empty clusters otherwise (faiss' own generator and splitting rule), so it could not give faiss'
assignment, hence not its NMI, even on exact data: it would be another backend, recorded as such, not a faster path
to the same number.
"""

from __future__ import annotations

import platform
from collections.abc import Mapping

import numpy as np
import torch

from dml_core.evaluation import Evaluation, evaluate

RETRIEVAL_METRICS = ("recall", "map_at_r", "r_precision")
# Each device ratio's bound (the report keeps the numbers even when one is missed).
DEVICE_TARGETS = {"device_knn_stage / device_bound_knn": 1.3}
# Reported beside them: how many times the CPU path's kNN stage (same run, same data) the device's takes.
DEVICE_RATIOS = (*DEVICE_TARGETS, "ours_knn_stage / device_knn_stage")


def device_retrieval(x: np.ndarray, y: np.ndarray, recall_ks, device: str | torch.device) -> Evaluation:
    """``evaluate()``'s retrieval metrics with the kNN stage on ``device`` (its metrics come back on the host)."""
    return evaluate(x, y, recall_ks, metrics=RETRIEVAL_METRICS, normalize=False, device=device)


def device_name(device: torch.device) -> str:
    """The device as the report names it: the GPU's name, or the CPU's."""
    if device.type == "cuda":
        return torch.cuda.get_device_name(device)
    return f"cpu {platform.processor() or platform.machine()}"


def device_report(
    measured: Mapping[str, float], device: torch.device, shape: dict, differing: Mapping[str, tuple[float, float]]
) -> dict:
    """The device figures' report: seconds, ratios (``DEVICE_RATIOS``), targets and the metrics that differ from
    the CPU path's."""
    ratios = {
        name: measured[numerator] / measured[denominator]
        for name in DEVICE_RATIOS
        for numerator, denominator in [name.split(" / ")]
    }
    return {
        "benchmark": "evaluation at SOP scale, kNN stage on the device",
        "shape": shape,
        "device": device_name(device),
        "torch": torch.__version__,
        "seconds": dict(measured),
        "ratios": ratios,
        "targets (at most)": DEVICE_TARGETS,
        "metrics differing from the CPU path's (device, CPU)": dict(differing),
        "clustering": "faiss k-means on the CPU (not timed here: the CPU report's clustering stage)",
    }


def missed_targets(ratios: Mapping[str, float], targets: Mapping[str, float]) -> dict[str, str]:
    """The ratios over their targets, as text.

    >>> missed_targets({"a / b": 1.5, "c / d": 1.0}, {"a / b": 1.3, "c / d": 1.3})
    {'a / b': '1.50 > 1.3'}
    """
    return {name: f"{ratios[name]:.2f} > {bound}" for name, bound in targets.items() if ratios[name] > bound}
