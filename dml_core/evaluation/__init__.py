"""Exact evaluation: Recall@K, NMI, F1, MAP@R and R-Precision from embeddings and labels.

The package's names load on first use (PEP 562), so that reading the metric names from ``registry`` (numpy only)
does not load torch and faiss with ``evaluate``.

It imports only the top-level helpers (``errors``, ``registry``); training, linear, the results gate, the per-query
companion file (``query_terms_file``), the commands and the GPU check import it.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from dml_core.evaluation.clustering import KMeansConfig
    from dml_core.evaluation.evaluator import Evaluation, evaluate
    from dml_core.evaluation.protocols import RECALL_KS, recall_ks_for
    from dml_core.evaluation.registry import METRIC_NAMES

_MODULE_OF = {
    "KMeansConfig": "clustering",
    "Evaluation": "evaluator",
    "evaluate": "evaluator",
    "RECALL_KS": "protocols",
    "recall_ks_for": "protocols",
    "METRIC_NAMES": "registry",
}
__all__ = ["METRIC_NAMES", "RECALL_KS", "Evaluation", "KMeansConfig", "evaluate", "recall_ks_for"]


def __getattr__(name: str):
    if name not in _MODULE_OF:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    return getattr(importlib.import_module(f"{__name__}.{_MODULE_OF[name]}"), name)
