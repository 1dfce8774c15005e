"""One evaluation from embeddings and labels: validate, normalise (or not), do the shared work once
(one kNN ranking, one clustering) for the metrics that need it, and report how it was done.

Reported values are in percent, as papers print them; keys match papers/<key>/published.yaml
("R@1", "NMI", "F1", "MAP@R", plus "RP" for R-Precision). The retrieval metrics' per-query terms come back too
(``Evaluation.per_query``, from the same pass), for a bootstrap over queries.
"""

from __future__ import annotations

import time
from collections.abc import Sequence
from dataclasses import asdict, dataclass, field, replace

import numpy as np
import torch

from dml_core.errors import InputError
from dml_core.evaluation import metrics as M
from dml_core.evaluation.clustering import KMeansConfig, kmeans_assign
from dml_core.evaluation.inputs import check_embeddings, check_labels
from dml_core.evaluation.knn import TIE_RULE, rank_neighbours, rank_within_set
from dml_core.evaluation.per_query import PerQuery

# Each metric declares the shared work it needs; the evaluator does each piece at most once.
METRIC_NEEDS: dict[str, str] = {
    "recall": "knn",
    "map_at_r": "knn",
    "r_precision": "knn",
    "nmi": "clustering",
    "f1": "clustering",
}
ALL_METRICS: tuple[str, ...] = tuple(METRIC_NEEDS)


@dataclass
class Evaluation:
    metrics: dict[str, float]  # percent
    protocol: dict
    timing: dict[str, float] = field(default_factory=dict)
    # The retrieval metrics' terms per query (for a bootstrap over queries); None without retrieval metrics.
    per_query: PerQuery | None = field(default=None, repr=False)

    def to_dict(self) -> dict:
        """Metrics, protocol and timing (the per-query arrays are stored on their own, beside a results file)."""
        record = asdict(replace(self, per_query=None))
        del record["per_query"]
        return record


def _as_numpy(array, name: str) -> np.ndarray:
    if isinstance(array, torch.Tensor):
        array = array.detach().cpu().numpy()
    return np.asarray(array)


def _mask(mask, n: int, name: str) -> np.ndarray:
    mask = _as_numpy(mask, name)
    if mask.dtype != bool or mask.shape != (n,):
        raise InputError(f"{name}: expected a boolean array of shape ({n},), found {mask.dtype} {mask.shape}")
    if not mask.any():
        raise InputError(f"{name}: selects no item")
    return mask


def evaluate(
    embeddings,
    labels,
    recall_ks: Sequence[int] = (1, 2, 4, 8),
    *,
    metrics: Sequence[str] = ALL_METRICS,
    normalize: bool = True,
    query_mask=None,
    gallery_mask=None,
    kmeans: KMeansConfig = KMeansConfig(),
    device: str | torch.device | None = None,
    chunk_rows: int | None = None,
) -> Evaluation:
    """Evaluate embeddings (n, d) with class labels (n,).

    Single-set protocol (CUB, Cars, SOP) when no masks are given: every item queries all other items,
    itself excluded by index. Query/gallery protocol (In-Shop) with ``query_mask`` and ``gallery_mask``:
    queries rank the gallery, nothing excluded; the sets must be disjoint. Clustering metrics use every
    evaluated item (query and gallery items together). ``normalize`` L2-normalises rows first.
    """
    unknown = sorted(set(metrics) - set(METRIC_NEEDS))
    if unknown:
        raise InputError(f"metrics: unknown {unknown}; expected some of {list(METRIC_NEEDS)}")
    emb_np = _as_numpy(embeddings, "embeddings")
    label_values = _as_numpy(labels, "labels")
    check_embeddings(emb_np)
    check_labels(label_values, len(emb_np))
    # Any label values (strings, large ids) become dense int64 codes.
    _, codes = np.unique(label_values, return_inverse=True)
    codes = codes.reshape(-1).astype(np.int64)
    n = len(codes)

    query_gallery = query_mask is not None or gallery_mask is not None
    if query_gallery:
        if query_mask is None or gallery_mask is None:
            raise InputError("query_mask and gallery_mask: expected both or neither, found only one")
        query_mask, gallery_mask = _mask(query_mask, n, "query_mask"), _mask(gallery_mask, n, "gallery_mask")
        overlap = int((query_mask & gallery_mask).sum())
        if overlap:
            raise InputError(
                f"query_mask and gallery_mask: expected disjoint sets (the query/gallery protocol excludes "
                f"nothing), found {overlap} item(s) in both"
            )
        query_rows, gallery_rows = np.flatnonzero(query_mask), np.flatnonzero(gallery_mask)
        evaluated_rows = np.flatnonzero(query_mask | gallery_mask)
    else:
        query_rows = gallery_rows = evaluated_rows = np.arange(n)

    n_classes = len(np.unique(codes[evaluated_rows]))
    if n_classes < 2:
        raise InputError(f"labels: expected at least 2 classes among the evaluated items, found {n_classes}")
    ks = sorted({int(k) for k in recall_ks})
    available = len(gallery_rows) - (0 if query_gallery else 1)
    if any(k < 1 for k in ks):
        raise InputError(f"recall_ks: expected positive integers, found {ks}")
    if "recall" in metrics and ks and ks[-1] > available:
        raise InputError(f"recall_ks: K={ks[-1]} is larger than the {available} gallery items each query can retrieve")

    device = torch.device(device or ("cuda" if torch.cuda.is_available() else "cpu"))
    x = torch.as_tensor(np.ascontiguousarray(emb_np, dtype=np.float32))
    if normalize:
        x = torch.nn.functional.normalize(x, dim=1)
    labels_t = torch.as_tensor(codes)

    values: dict[str, float] = {}
    timing: dict[str, float] = {}
    per_query = None
    protocol: dict = {
        "protocol": "query-gallery" if query_gallery else "single-set",
        "self_exclusion": "none" if query_gallery else "by index",
        "normalize": normalize,
        "units": "percent",
        "num_items": len(evaluated_rows),
        "num_classes": n_classes,
    }
    needs = {METRIC_NEEDS[m] for m in metrics}
    if "knn" in needs:
        started = time.perf_counter()
        gallery_counts = np.bincount(codes[gallery_rows], minlength=codes.max() + 1)
        max_positives = int((gallery_counts[codes[query_rows]] - (0 if query_gallery else 1)).max())
        if max_positives < 1:
            raise InputError("labels: expected some query to have a same-class item to retrieve, found none")
        wants_top = "map_at_r" in metrics or "r_precision" in metrics
        k = min(max_positives, available) if wants_top else 0
        if query_gallery:
            ranking = rank_neighbours(
                x[query_rows].to(device),
                x[gallery_rows].to(device),
                labels_t[query_rows],
                labels_t[gallery_rows],
                k=k,
                chunk_rows=chunk_rows,
            )
        else:
            ranking = rank_within_set(x.to(device), labels_t.to(device), k=k, chunk_rows=chunk_rows)
        if "recall" in metrics:
            for kk, value in M.recall_at_k(ranking.first_positive_rank, ks).items():
                values[f"R@{kk}"] = 100.0 * value
        # Per-query terms once; each metric is their mean, and they are kept for a bootstrap over queries.
        ap_terms = rp_terms = None
        if "map_at_r" in metrics:
            ap_terms = M.average_precision_at_r(ranking.neighbour_is_positive, ranking.num_positives)
            values["MAP@R"] = 100.0 * M.mean_over_queries(ap_terms)
        if "r_precision" in metrics:
            rp_terms = M.r_precision_per_query(ranking.neighbour_is_positive, ranking.num_positives)
            values["RP"] = 100.0 * M.mean_over_queries(rp_terms)
        per_query = PerQuery.from_evaluation(ranking.first_positive_rank, ap_terms, rp_terms)
        timing["knn_seconds"] = time.perf_counter() - started
        protocol["knn"] = {
            "distance": "euclidean (ranked by ||g||^2 - 2 q.g in fp32, TF32 off)",
            "tie_rule": TIE_RULE,
            "recall_ks": ks,
            "num_queries": len(query_rows),
            "num_gallery": len(gallery_rows),
            "queries_without_positive": int((ranking.first_positive_rank < 0).sum()),
            "queries_without_positive_rule": "left out of every retrieval metric",
            "neighbours_for_map_at_r": k,
            "device": str(device),
            "search": ranking.search,
        }
    if "clustering" in needs:
        started = time.perf_counter()
        assignment = kmeans_assign(x[evaluated_rows].numpy(), n_classes, kmeans)
        evaluated_codes = codes[evaluated_rows]
        if "nmi" in metrics:
            values["NMI"] = 100.0 * M.normalized_mutual_information(evaluated_codes, assignment)
        if "f1" in metrics:
            values["F1"] = 100.0 * M.clustering_f1(evaluated_codes, assignment)
        timing["clustering_seconds"] = time.perf_counter() - started
        protocol["clustering"] = {
            **kmeans.describe(),
            "n_clusters": n_classes,
            "items": "all evaluated items" if not query_gallery else "query and gallery items together",
            "nmi_normalization": "arithmetic",
            "f1": "pair counting (Song et al. 2016)",
        }
    return Evaluation(metrics=values, protocol=protocol, timing=timing, per_query=per_query)
