"""One evaluation from embeddings and labels: validate, normalise (or not), do the shared work once
(one kNN ranking, one clustering) for the metrics that need it, and report how it was done.

Which metrics there are, and the shared work each needs, is ``registry.METRICS``: the evaluator runs the kNN
stage when a chosen metric needs the ranking (with each query's R nearest neighbours when one needs those) and the
clustering stage when one needs the clustering, then hands each metric the stage's shared work.

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
from dml_core.evaluation.clustering import KMeansConfig, kmeans_assign
from dml_core.evaluation.inputs import check_embeddings, check_labels
from dml_core.evaluation.knn import TIE_RULE, NeighbourRanking, rank_neighbours, rank_within_set
from dml_core.evaluation.per_query import PerQuery
from dml_core.evaluation.registry import (
    CLUSTERING,
    METRIC_NAMES,
    NEIGHBOURS,
    RETRIEVAL_WORK,
    Metric,
    SharedWork,
    chosen_metrics,
)


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


@dataclass(frozen=True)
class _Prepared:
    """The checked inputs: class codes, vectors (normalised or not, on the CPU), and which rows play which part."""

    codes: np.ndarray  # dense int64 class codes of every item
    vectors: torch.Tensor  # (n, d) float32
    query_rows: np.ndarray
    gallery_rows: np.ndarray
    evaluated_rows: np.ndarray  # queries and gallery together: what the clustering sees
    query_gallery: bool
    n_classes: int  # among the evaluated items
    device: torch.device  # where the kNN search runs

    @property
    def retrievable(self) -> int:
        """How many gallery items each query can retrieve (its own row excluded in the single-set protocol)."""
        return len(self.gallery_rows) - (0 if self.query_gallery else 1)


def evaluate(
    embeddings,
    labels,
    recall_ks: Sequence[int] = (1, 2, 4, 8),
    *,
    metrics: Sequence[str] = METRIC_NAMES,
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
    chosen = chosen_metrics(metrics)
    items = _prepare(embeddings, labels, query_mask, gallery_mask, normalize, device)
    ks = _recall_ks(recall_ks, items, checked=any(metric.name == "recall" for metric in chosen))
    result = Evaluation(metrics={}, protocol=_protocol(items, normalize), timing={})
    retrieval = [metric for metric in chosen if metric.needs <= RETRIEVAL_WORK]
    if retrieval:
        _retrieval_stage(result, retrieval, items, ks, chunk_rows)
    clustering = [metric for metric in chosen if metric.needs <= {CLUSTERING}]
    if clustering:
        _clustering_stage(result, clustering, items, kmeans)
    return result


def _prepare(embeddings, labels, query_mask, gallery_mask, normalize: bool, device) -> _Prepared:
    """Check the inputs (each problem one ``InputError``) and lay out the items the way both stages read them."""
    emb_np = _as_numpy(embeddings, "embeddings")
    label_values = _as_numpy(labels, "labels")
    check_embeddings(emb_np)
    check_labels(label_values, len(emb_np))
    # Any label values (strings, large ids) become dense int64 codes.
    _, codes = np.unique(label_values, return_inverse=True)
    codes = codes.reshape(-1).astype(np.int64)
    query_gallery = query_mask is not None or gallery_mask is not None
    if query_gallery:
        query_rows, gallery_rows, evaluated_rows = _query_and_gallery_rows(query_mask, gallery_mask, len(codes))
    else:
        query_rows = gallery_rows = evaluated_rows = np.arange(len(codes))
    n_classes = len(np.unique(codes[evaluated_rows]))
    if n_classes < 2:
        raise InputError(f"labels: expected at least 2 classes among the evaluated items, found {n_classes}")
    vectors = torch.as_tensor(np.ascontiguousarray(emb_np, dtype=np.float32))
    if normalize:
        vectors = torch.nn.functional.normalize(vectors, dim=1)
    device = torch.device(device or ("cuda" if torch.cuda.is_available() else "cpu"))
    return _Prepared(codes, vectors, query_rows, gallery_rows, evaluated_rows, query_gallery, n_classes, device)


def _query_and_gallery_rows(query_mask, gallery_mask, n: int) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """The rows of the queries, of the gallery, and of both (two disjoint, non-empty boolean masks)."""
    if query_mask is None or gallery_mask is None:
        raise InputError("query_mask and gallery_mask: expected both or neither, found only one")
    query_mask, gallery_mask = _mask(query_mask, n, "query_mask"), _mask(gallery_mask, n, "gallery_mask")
    overlap = int((query_mask & gallery_mask).sum())
    if overlap:
        raise InputError(
            f"query_mask and gallery_mask: expected disjoint sets (the query/gallery protocol excludes "
            f"nothing), found {overlap} item(s) in both"
        )
    return np.flatnonzero(query_mask), np.flatnonzero(gallery_mask), np.flatnonzero(query_mask | gallery_mask)


def _recall_ks(recall_ks: Sequence[int], items: _Prepared, checked: bool) -> list[int]:
    """The K list, sorted and unique; with Recall@K chosen, no K beyond what a query can retrieve."""
    ks = sorted({int(k) for k in recall_ks})
    if any(k < 1 for k in ks):
        raise InputError(f"recall_ks: expected positive integers, found {ks}")
    if checked and ks and ks[-1] > items.retrievable:
        raise InputError(
            f"recall_ks: K={ks[-1]} is larger than the {items.retrievable} gallery items each query can retrieve"
        )
    return ks


def _protocol(items: _Prepared, normalize: bool) -> dict:
    return {
        "protocol": "query-gallery" if items.query_gallery else "single-set",
        "self_exclusion": "none" if items.query_gallery else "by index",
        "normalize": normalize,
        "units": "percent",
        "num_items": len(items.evaluated_rows),
        "num_classes": items.n_classes,
    }


def _report(result: Evaluation, metrics: list[Metric], work: SharedWork) -> dict[str, np.ndarray]:
    """Each metric's values into ``result``; their per-query terms, by ``PerQuery`` field."""
    terms: dict[str, np.ndarray] = {}
    for metric in metrics:
        computed = metric.compute(work)
        result.metrics.update(computed.values)
        terms.update(computed.terms)
    return terms


def _retrieval_stage(
    result: Evaluation, metrics: list[Metric], items: _Prepared, ks: list[int], chunk_rows: int | None
) -> None:
    """One kNN search for every retrieval metric; their values, per-query terms, timing and protocol record."""
    started = time.perf_counter()
    ranking, k = _ranking(items, any(NEIGHBOURS in metric.needs for metric in metrics), chunk_rows)
    terms = _report(result, metrics, SharedWork(ranking=ranking, recall_ks=tuple(ks)))
    # Kept for a bootstrap over queries: each retrieval metric is the mean of its terms.
    result.per_query = PerQuery.from_evaluation(ranking.first_positive_rank, **terms)
    result.timing["knn_seconds"] = time.perf_counter() - started
    result.protocol["knn"] = {
        "distance": "euclidean (ranked by ||g||^2 - 2 q.g in fp32, TF32 off)",
        "tie_rule": TIE_RULE,
        "recall_ks": ks,
        "num_queries": len(items.query_rows),
        "num_gallery": len(items.gallery_rows),
        "queries_without_positive": int((ranking.first_positive_rank < 0).sum()),
        "queries_without_positive_rule": "left out of every retrieval metric",
        "neighbours_for_map_at_r": k,
        "device": str(items.device),
        "search": ranking.search,
    }


def _ranking(items: _Prepared, neighbours: bool, chunk_rows: int | None) -> tuple[NeighbourRanking, int]:
    """The ranking, with each query's R nearest neighbours when ``neighbours`` (k = the largest R), else none."""
    codes, query_rows, gallery_rows = items.codes, items.query_rows, items.gallery_rows
    gallery_counts = np.bincount(codes[gallery_rows], minlength=codes.max() + 1)
    max_positives = int((gallery_counts[codes[query_rows]] - (0 if items.query_gallery else 1)).max())
    if max_positives < 1:
        raise InputError("labels: expected some query to have a same-class item to retrieve, found none")
    k = min(max_positives, items.retrievable) if neighbours else 0
    x, labels, device = items.vectors, torch.as_tensor(codes), items.device
    if items.query_gallery:
        ranking = rank_neighbours(
            x[query_rows].to(device),
            x[gallery_rows].to(device),
            labels[query_rows],
            labels[gallery_rows],
            k=k,
            chunk_rows=chunk_rows,
        )
    else:
        ranking = rank_within_set(x.to(device), labels.to(device), k=k, chunk_rows=chunk_rows)
    return ranking, k


def _clustering_stage(result: Evaluation, metrics: list[Metric], items: _Prepared, kmeans: KMeansConfig) -> None:
    """One k-means over every evaluated item for every clustering metric; their values, timing, protocol record."""
    started = time.perf_counter()
    rows = items.evaluated_rows
    assignment = kmeans_assign(items.vectors[rows].numpy(), items.n_classes, kmeans)
    _report(result, metrics, SharedWork(labels=items.codes[rows], clusters=assignment))
    result.timing["clustering_seconds"] = time.perf_counter() - started
    result.protocol["clustering"] = {
        **kmeans.describe(),
        "n_clusters": items.n_classes,
        "items": "all evaluated items" if not items.query_gallery else "query and gallery items together",
        "nmi_normalization": "arithmetic",
        "f1": "pair counting (Song et al. 2016)",
    }
