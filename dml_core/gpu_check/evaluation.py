"""The ``evaluation`` part: an SOP-sized embedding set (60,502 x 512, 11,316 classes of 2 to 12 items, as SOP's test
split) evaluated on the GPU and on the CPU (``dml_core.evaluation.evaluate``: Recall@1/10/100/1000 and MAP@R, the
single-set protocol), with both times.

The two devices must give the very same numbers. They rank by the same fp32 distance formula but through different
code (a chunked GEMM search on CUDA, the symmetric block search on the CPU), so on random float data two distances
that agree to the last bit can swap (README, "Evaluation protocol"). The synthetic set is therefore integer-valued
(class centres and noise drawn as small integers, no L2 normalisation): every product and distance is an integer
well under 2**24, exact in fp32 on both devices, and the many exact ties it makes exercise the tie rule too. A
difference is then a bug, never rounding.
"""

from __future__ import annotations

import time

import numpy as np

from dml_core.evaluation import evaluate, recall_ks_for
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
    centre plus noise in -1..1; shuffled, so class members are not neighbours by index."""
    rng = np.random.default_rng(seed)
    labels = np.repeat(np.arange(classes), sop_like_class_sizes(items, classes, seed))
    centres = rng.integers(-1, 2, size=(classes, dimensions)) * (rng.random((classes, dimensions)) < 0.2)
    embeddings = (centres[labels] + rng.integers(-1, 2, size=(items, dimensions))).astype(np.float32)
    order = rng.permutation(items)
    return embeddings[order], labels[order]


def timed_evaluation(embeddings: np.ndarray, labels: np.ndarray, device: str) -> tuple[dict[str, float], float, dict]:
    """The metrics (percent), the seconds and the protocol record of one evaluation on ``device``."""
    started = time.perf_counter()
    result = evaluate(
        embeddings, labels, recall_ks_for("sop"), metrics=METRICS, normalize=False, device=device
    )  # fmt: skip
    return result.metrics, time.perf_counter() - started, result.protocol


def compare_devices(embeddings: np.ndarray, labels: np.ndarray, device: str) -> dict:
    """One evaluation on ``device`` and one on the CPU: each one's metrics, seconds and kNN record, and the metrics
    whose values differ (``differing``: name -> (device's, CPU's))."""
    on_device, device_seconds, device_protocol = timed_evaluation(embeddings, labels, device)
    cpu, cpu_seconds, cpu_protocol = timed_evaluation(embeddings, labels, "cpu")
    names = on_device.keys() | cpu.keys()
    return {
        "items": len(labels),
        "classes": len(np.unique(labels)),
        "dimensions": embeddings.shape[1],
        "device": {"metrics": on_device, "seconds": device_seconds, "knn": device_protocol.get("knn")},
        "cpu": {"metrics": cpu, "seconds": cpu_seconds, "knn": cpu_protocol.get("knn")},
        "differing": {
            name: (on_device.get(name), cpu.get(name)) for name in sorted(names) if on_device.get(name) != cpu.get(name)
        },
    }


def run_evaluation(context: CheckContext) -> Outcome:
    figures = compare_devices(*integer_embeddings(), str(context.device))
    if figures["differing"]:
        shown = ", ".join(f"{name} GPU {g} vs CPU {c}" for name, (g, c) in figures["differing"].items())
        raise PartFailed(f"the GPU's metrics differ from the CPU's: {shown}", figures)
    cpu, gpu_seconds = figures["cpu"], figures["device"]["seconds"]
    return Outcome(
        f"R@1 {cpu['metrics']['R@1']:.2f}, MAP@R {cpu['metrics']['MAP@R']:.2f} on both; GPU {gpu_seconds:.1f} s, "
        f"CPU {cpu['seconds']:.1f} s",
        figures,
    )
