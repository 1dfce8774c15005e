"""Exact evaluation: Recall@K, NMI, F1, MAP@R and R-Precision from embeddings and labels."""

from dml_core.evaluation.clustering import KMeansConfig
from dml_core.evaluation.evaluator import ALL_METRICS, Evaluation, evaluate
from dml_core.evaluation.protocols import RECALL_KS, recall_ks_for

__all__ = ["ALL_METRICS", "RECALL_KS", "Evaluation", "KMeansConfig", "evaluate", "recall_ks_for"]
