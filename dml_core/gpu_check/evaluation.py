"""The ``evaluation`` part: an SOP-sized embedding set evaluated on the GPU and on the CPU, which must give the very
same numbers, with both times and the GPU's kNN stage against its bound (reported, not judged).

The two devices rank through different code (docs/evaluation.md), so on random float data equal distances can swap;
the set is integer-valued instead, exact in fp32 on both devices, so that a difference is a bug, never rounding.
"""

from __future__ import annotations

import time
from collections.abc import Mapping

import numpy as np
import torch

from dml_core.evaluation import Evaluation, evaluate, recall_ks_for
from dml_core.evaluation.knn import DEFAULT_CHUNK_ELEMENTS, exact_fp32_matmul
from dml_core.gpu_check.part import CheckContext, Outcome, PartFailed

SOP_TEST_ITEMS, SOP_TEST_CLASSES, DIMENSIONS = 60_502, 11_316, 512
SMALLEST_CLASS, LARGEST_CLASS = 2, 12  # SOP's test classes hold 2 to 12 images
METRICS = ("recall", "map_at_r")


def sop_like_class_sizes(items: int, classes: int, seed: int = 0) -> np.ndarray:
    """``classes`` sizes between 2 and 12 that sum to ``items``: two items each, the rest put into distinct free
    places drawn at random among the 10 more each class can take.

    >>> sizes = sop_like_class_sizes(100, 20)
    >>> int(sizes.sum()), int(sizes.min()) >= 2, int(sizes.max()) <= 12
    (100, True, True)
    """
    room = LARGEST_CLASS - SMALLEST_CLASS
    extra = items - SMALLEST_CLASS * classes
    if not 0 <= extra <= room * classes:
        raise ValueError(f"{items} items cannot form {classes} classes of {SMALLEST_CLASS}-{LARGEST_CLASS}")
    places = np.random.default_rng(seed).choice(room * classes, size=extra, replace=False)
    return SMALLEST_CLASS + np.bincount(places // room, minlength=classes)


def integer_embeddings(
    items: int = SOP_TEST_ITEMS, classes: int = SOP_TEST_CLASSES, dimensions: int = DIMENSIONS, seed: int = 0
) -> tuple[np.ndarray, np.ndarray]:
    """Embeddings (float32 holding integers) and labels: each class a sparse centre of -1/0/1 entries, each item its
    centre plus noise in -1..1; shuffled, so class members are not neighbours by index. Not L2-normalised: every
    product and distance is an integer well under 2**24, exact in fp32, and the many exact ties test the tie rule."""
    rng = np.random.default_rng(seed)
    labels = np.repeat(np.arange(classes), sop_like_class_sizes(items, classes, seed))
    centres = rng.integers(-1, 2, size=(classes, dimensions)) * (rng.random((classes, dimensions)) < 0.2)
    embeddings = (centres[labels] + rng.integers(-1, 2, size=(items, dimensions))).astype(np.float32)
    order = rng.permutation(items)
    return embeddings[order], labels[order]


def timed_evaluation(embeddings: np.ndarray, labels: np.ndarray, device: str) -> tuple[Evaluation, float]:
    """One evaluation on ``device`` (SOP's K list, the part's metrics) and its seconds."""
    started = time.perf_counter()
    result = evaluate(
        embeddings, labels, recall_ks_for("sop"), metrics=METRICS, normalize=False, device=device
    )  # fmt: skip
    return result, time.perf_counter() - started


def synchronize(device: torch.device) -> None:
    """Wait for the device's queued work (CUDA runs kernels asynchronously: a timer must not stop before them)."""
    if device.type == "cuda":
        torch.cuda.synchronize(device)


def bound_gemm_topk(x: torch.Tensor, k: int, chunk_rows: int) -> torch.Tensor:
    """The kNN stage's bound on ``x``'s device: per chunk of ``chunk_rows`` queries one bare fp32 GEMM against every
    item and the ``k`` largest products of each row (no norms, self-exclusion, tie rule or positives); the indices,
    (n, k), largest product first. Its target ratio (1.3) is the evaluation benchmark's, on float embeddings; this
    integer set's many tied k-th neighbours cost the search a second pass the bound does not make."""
    with torch.inference_mode(), exact_fp32_matmul():
        chunks = [
            torch.topk(x[start : start + chunk_rows] @ x.T, k, dim=1).indices for start in range(0, len(x), chunk_rows)
        ]
        indices = torch.cat(chunks)
    synchronize(x.device)
    return indices


def timed_bound(embeddings: np.ndarray, k: int, device: str) -> float:
    """Seconds of ``bound_gemm_topk`` on ``device`` with the search's own chunk size, the embeddings already there."""
    x = torch.from_numpy(embeddings).to(device)
    synchronize(x.device)
    started = time.perf_counter()
    bound_gemm_topk(x, k, max(1, DEFAULT_CHUNK_ELEMENTS // len(x)))
    return time.perf_counter() - started


def differing_metrics(on_device: Mapping[str, float], cpu: Mapping[str, float]) -> dict[str, tuple]:
    """The metrics whose values differ, or that one side lacks: name -> (device's, CPU's; None where absent).

    >>> differing_metrics({"R@1": 50.0, "MAP@R": 10.0}, {"R@1": 50.0, "MAP@R": 10.5, "NMI": 80.0})
    {'MAP@R': (10.0, 10.5), 'NMI': (None, 80.0)}
    """
    names = sorted(on_device.keys() | cpu.keys())
    return {name: (on_device.get(name), cpu.get(name)) for name in names if on_device.get(name) != cpu.get(name)}


def compare_devices(embeddings: np.ndarray, labels: np.ndarray, device: str) -> dict:
    """One evaluation on ``device`` and one on the CPU: each one's metrics, seconds, kNN stage seconds and kNN
    record, the metrics whose values differ (``differing``: name -> (device's, CPU's)), and the device's kNN stage
    over its bound (``knn_over_bound``; the bound's k: the search's neighbours, itself included)."""
    on_device, device_seconds = timed_evaluation(embeddings, labels, device)
    cpu, cpu_seconds = timed_evaluation(embeddings, labels, "cpu")
    bound_seconds = timed_bound(embeddings, on_device.protocol["knn"]["neighbours_for_map_at_r"] + 1, device)

    def record(result: Evaluation, seconds: float) -> dict:
        knn_seconds = result.timing["knn_seconds"]
        return {
            "metrics": result.metrics,
            "seconds": seconds,
            "knn_seconds": knn_seconds,
            "knn": result.protocol["knn"],
        }

    return {
        "items": len(labels),
        "classes": len(np.unique(labels)),
        "dimensions": embeddings.shape[1],
        "device": record(on_device, device_seconds),
        "cpu": record(cpu, cpu_seconds),
        "bound_seconds": bound_seconds,
        "knn_over_bound": on_device.timing["knn_seconds"] / bound_seconds,
        "differing": differing_metrics(on_device.metrics, cpu.metrics),
    }


def run_evaluation(context: CheckContext) -> Outcome:
    timed_evaluation(*integer_embeddings(items=1_200, classes=200), str(context.device))  # warm-up: context, cuBLAS
    bound_gemm_topk(torch.ones(8, 4, device=context.device), 2, 4)
    figures = compare_devices(*integer_embeddings(), str(context.device))
    if figures["differing"]:
        shown = ", ".join(f"{name} GPU {g} vs CPU {c}" for name, (g, c) in figures["differing"].items())
        raise PartFailed(f"the GPU's metrics differ from the CPU's: {shown}", figures)
    cpu, gpu_seconds = figures["cpu"], figures["device"]["seconds"]
    return Outcome(
        f"R@1 {cpu['metrics']['R@1']:.2f}, MAP@R {cpu['metrics']['MAP@R']:.2f} on both; GPU {gpu_seconds:.1f} s, "
        f"CPU {cpu['seconds']:.1f} s; GPU kNN stage/bound {figures['knn_over_bound']:.2f}",
        figures,
    )
