"""Exact nearest-neighbour ranking: the one search that serves every retrieval metric.

One pass over chunked fp32 distances gives each query's nearest same-class rank (Recall@K for every K at once) and
its first ``k`` neighbours (MAP@R, R-Precision). Equal distances are ordered by gallery index and a query's own row is
excluded by index, so the ranking is deterministic and an exact duplicate stays a neighbour (docs/evaluation.md).
"""

from __future__ import annotations

import contextlib
from collections.abc import Iterator

import numpy as np
import torch

from dml_core.errors import InputError
from dml_core.evaluation.inputs import check_embedding_shape
from dml_core.evaluation.registry import NeighbourRanking

# Distances held at once per chunk; 2**26 fp32 values = 256 MiB.
DEFAULT_CHUNK_ELEMENTS = 2**26
TIE_RULE = "equal distances ordered by gallery index, smaller first"
CHUNKED_SEARCH = "chunked over queries, one GEMM per chunk"
SYMMETRIC_SEARCH = "symmetric: one GEMM per pair of class-aligned blocks (OpenBLAS), one compiled pass (numba)"
# The symmetric search keeps each item's top-k by insertion (cost ~k^2 log(n/k) per item): fine for MAP@R on
# CUB, Cars and SOP (k <= ~100), not for a set whose largest class holds a good part of it.
SYMMETRIC_MAX_K = 128


@contextlib.contextmanager
def exact_fp32_matmul() -> Iterator[None]:
    """Switch TF32 off for the duration: TF32 matmuls change neighbour order.

    Through ``fp32_precision`` only, never the legacy ``allow_tf32``: torch refuses to read that one once the new
    API has set the precision (``torch.backends.fp32_precision = "tf32"``, say)."""
    matmul = torch.backends.cuda.matmul
    previous = matmul.fp32_precision
    matmul.fp32_precision = "ieee"
    try:
        yield
    finally:
        matmul.fp32_precision = previous


def _positive_index_table(
    query_labels: torch.Tensor, gallery_labels: torch.Tensor, self_index: torch.Tensor | None
) -> tuple[torch.Tensor, torch.Tensor]:
    """Gallery indices of each query's same-class items (self removed), ascending, padded with -1.

    Built from a sort of the gallery labels, so its cost is O(n log n + n_q * max class size).
    """
    order = torch.argsort(gallery_labels, stable=True)
    sorted_labels = gallery_labels[order]
    classes, counts = torch.unique_consecutive(sorted_labels, return_counts=True)
    starts = torch.cumsum(counts, 0) - counts
    slot = torch.searchsorted(classes, query_labels)
    slot = slot.clamp(max=len(classes) - 1)
    present = classes[slot] == query_labels
    width = int(counts.max())
    offsets = torch.arange(width, device=gallery_labels.device)
    start = starts[slot]
    count = torch.where(present, counts[slot], torch.zeros_like(slot))
    valid = offsets[None, :] < count[:, None]
    position = (start[:, None] + offsets[None, :]).clamp(max=len(order) - 1)
    table = torch.where(valid, order[position], torch.full_like(position, -1))
    if self_index is not None:
        table = torch.where(table == self_index[:, None], torch.full_like(table, -1), table)
    # Ascending gallery index per row, padding last: the first minimum is then the smallest index.
    table = torch.where(table < 0, torch.full_like(table, torch.iinfo(table.dtype).max), table)
    table = torch.sort(table, dim=1).values
    table = torch.where(table == torch.iinfo(table.dtype).max, torch.full_like(table, -1), table)
    return table, (table >= 0).sum(1)


def host_arithmetic(device: torch.device) -> bool:
    """Whether tensors on ``device`` go through numpy / OpenBLAS (the CPU) or stay in torch (CUDA: a CUDA tensor
    cannot be handed to numpy). The one switch of every numpy / torch branch here, so a CPU test can run the device
    path."""
    return device.type == "cpu"


class _RankingDistances:
    """``||g||^2 - 2 q.g`` for a chunk of queries: the squared Euclidean distance less ``||q||^2``, a per-row
    constant that changes no ranking (every comparison the metrics make is within a row).

    CPU: one OpenBLAS GEMM (numpy) over augmented operands ``[q, 1] . [-2g, ||g||^2]``, so the addition rides
    inside the product; numpy's OpenBLAS sgemm, as docs/performance.md explains.
    CUDA: ``torch.addmm``.
    """

    def __init__(self, queries: torch.Tensor, gallery: torch.Tensor) -> None:
        self.on_cpu = host_arithmetic(gallery.device)
        gallery_sq = gallery.pow(2).sum(1)
        if self.on_cpu:
            self.left = torch.cat([queries, torch.ones(len(queries), 1)], dim=1).numpy()
            self.right = torch.cat([-2.0 * gallery, gallery_sq[:, None]], dim=1).numpy().T
        else:
            self.queries, self.gallery, self.gallery_sq = queries, gallery, gallery_sq

    def __call__(self, start: int, stop: int) -> torch.Tensor:
        if self.on_cpu:
            return torch.from_numpy(self.left[start:stop] @ self.right)
        return torch.addmm(self.gallery_sq[None, :], self.queries[start:stop], self.gallery.T, alpha=-2.0)


def _order_by_distance_then_index(values: torch.Tensor, indices: torch.Tensor) -> torch.Tensor:
    """``indices`` reordered per row by the ranking rule: by ``values`` (their distances), equal ones by index."""
    indices, by_index = torch.sort(indices, dim=1)
    _, by_value = torch.sort(values.gather(1, by_index), dim=1, stable=True)
    return indices.gather(1, by_value)


def _top_k_past_a_tie(distances: torch.Tensor, kth_value: torch.Tensor, k: int) -> torch.Tensor:
    """The k nearest of each row under the ranking rule, for rows whose k-th distance ``kth_value`` is shared
    with further items: every item closer than it (fewer than k), then the smallest indices among the items at it.

    One ``topk`` over a per-item priority (closer: -1, at the k-th distance: its index, farther: last), so a row costs
    O(n), where a full stable sort of the row costs O(n log n) (sets with many equal distances, as the GPU check's
    integer-valued one, have many such rows: docs/performance.md).
    """
    n_cols = distances.shape[1]
    cutoff = kth_value[:, None]
    position = torch.arange(n_cols, device=distances.device).expand_as(distances)
    priority = torch.where(distances == cutoff, position, n_cols).masked_fill(distances < cutoff, -1)
    chosen = torch.topk(priority, k, dim=1, largest=False).indices
    return _order_by_distance_then_index(distances.gather(1, chosen), chosen)


def _ordered_top_k(distances: torch.Tensor, k: int) -> torch.Tensor:
    """Indices of the k smallest distances per row under the ranking rule (distance, then index)."""
    n_cols = distances.shape[1]
    take = min(k + 1, n_cols)
    values, indices = torch.topk(distances, take, dim=1, largest=False, sorted=True)
    # topk leaves the order of equal values unspecified.
    indices = _order_by_distance_then_index(values, indices)
    if take > k > 0:
        # If the (k+1)-th candidate ties the k-th, topk may have dropped a smaller-index twin: redo those rows.
        rows = torch.nonzero(values[:, k] == values[:, k - 1]).flatten()
        if len(rows):
            indices[rows, :k] = _top_k_past_a_tie(distances[rows], values[rows, k - 1], k)
    return indices[:, :k]


def _count_per_row(distances: torch.Tensor, threshold: torch.Tensor, inclusive: bool) -> torch.Tensor:
    """Per row, how many distances are below (or at) the row's threshold.

    On the CPU numpy does this much faster than torch's bool reductions (docs/performance.md), so the CPU path
    goes through zero-copy numpy views.
    """
    if host_arithmetic(distances.device):
        values, limit = distances.numpy(), threshold.numpy()
        below = (values <= limit) if inclusive else (values < limit)
        return torch.from_numpy(below.view(np.uint8).sum(1, dtype=np.int64))
    below = (distances <= threshold) if inclusive else (distances < threshold)
    return below.sum(1)


def _first_positive_rank(
    distances: torch.Tensor, positive_table: torch.Tensor, gallery_index: torch.Tensor
) -> torch.Tensor:
    """Rank of the nearest same-class item: items strictly closer, plus equally close items with a
    smaller gallery index."""
    has_positive = positive_table[:, 0] >= 0
    gathered = distances.gather(1, positive_table.clamp(min=0))
    gathered = gathered.masked_fill(positive_table < 0, float("inf"))
    nearest, column = gathered.min(1)  # first minimum = smallest gallery index among tied positives
    nearest_index = positive_table.gather(1, column[:, None]).squeeze(1)
    threshold = nearest[:, None]
    closer = _count_per_row(distances, threshold, inclusive=False)
    equal = _count_per_row(distances, threshold, inclusive=True) - closer
    equal_positives = (gathered == threshold).sum(1)
    rank = closer
    # Rows where a different-class item sits at exactly the same distance: count those before it.
    tied = torch.nonzero(has_positive & (equal > equal_positives)).flatten()
    if len(tied):
        before = (distances[tied] == threshold[tied]) & (gallery_index[None, :] < nearest_index[tied, None])
        rank = rank.clone()
        rank[tied] += before.sum(1)
    return torch.where(has_positive, rank, torch.full_like(rank, -1))


def rank_neighbours(
    queries: torch.Tensor,
    gallery: torch.Tensor,
    query_labels: torch.Tensor,
    gallery_labels: torch.Tensor,
    k: int,
    self_index: torch.Tensor | None = None,
    chunk_rows: int | None = None,
) -> NeighbourRanking:
    """Exact neighbour ranking of ``queries`` against ``gallery``.

    ``self_index[i]`` is the gallery row of query ``i`` (single-set protocol: it is excluded);
    ``None`` for a query/gallery protocol with disjoint sets. ``k`` neighbours are returned per query.
    Empty or zero-width sets, or sets of different widths, are an ``InputError``.
    """
    check_embedding_shape(tuple(queries.shape), "queries")
    check_embedding_shape(tuple(gallery.shape), "gallery")
    if queries.shape[1] != gallery.shape[1]:
        raise InputError(
            f"queries and gallery: expected the same width, found {queries.shape[1]} and {gallery.shape[1]}"
        )
    n_queries, n_gallery = len(queries), len(gallery)
    device = gallery.device
    queries = queries.to(device=device, dtype=torch.float32)
    gallery = gallery.to(dtype=torch.float32)
    query_labels, gallery_labels = query_labels.to(device), gallery_labels.to(device)
    if self_index is not None:
        self_index = self_index.to(device)
    chunk_rows = chunk_rows or max(1, DEFAULT_CHUNK_ELEMENTS // max(n_gallery, 1))
    ranking_distances = _RankingDistances(queries, gallery)
    gallery_index = torch.arange(n_gallery, device=device)
    positive_table, num_positives = _positive_index_table(query_labels, gallery_labels, self_index)

    first_rank = torch.empty(n_queries, dtype=torch.long, device=device)
    neighbours = torch.empty((n_queries, k), dtype=torch.long, device=device)
    with torch.inference_mode(), exact_fp32_matmul():
        for start in range(0, n_queries, chunk_rows):
            stop = min(start + chunk_rows, n_queries)
            distances = ranking_distances(start, stop)
            if self_index is not None:
                distances[torch.arange(stop - start, device=device), self_index[start:stop]] = float("inf")
            first_rank[start:stop] = _first_positive_rank(distances, positive_table[start:stop], gallery_index)
            if k:
                neighbours[start:stop] = _ordered_top_k(distances, k)
    is_positive = gallery_labels[neighbours] == query_labels[:, None]
    return NeighbourRanking(
        first_positive_rank=first_rank.cpu().numpy(),
        num_positives=num_positives.cpu().numpy(),
        neighbours=neighbours.cpu().numpy(),
        neighbour_is_positive=is_positive.cpu().numpy(),
        search=CHUNKED_SEARCH + (" (OpenBLAS)" if host_arithmetic(device) else " (torch)"),
    )


def rank_within_set(
    embeddings: torch.Tensor, labels: torch.Tensor, k: int, chunk_rows: int | None = None
) -> NeighbourRanking:
    """Single-set protocol: every item ranks all the others, itself excluded by index.

    The same ranking as ``rank_neighbours(embeddings, embeddings, labels, labels, k, arange(n))``. On the
    CPU it runs the symmetric blocked search of ``knn_symmetric`` (half the GEMM, one compiled pass) unless
    ``k`` exceeds ``SYMMETRIC_MAX_K``; elsewhere the chunked search (``chunk_rows`` applies to that one only).
    """
    check_embedding_shape(tuple(embeddings.shape))
    if not host_arithmetic(embeddings.device) or k > SYMMETRIC_MAX_K:
        index = torch.arange(len(embeddings), device=embeddings.device)
        return rank_neighbours(embeddings, embeddings, labels, labels, k, self_index=index, chunk_rows=chunk_rows)
    # Here, not at the top: knn_symmetric loads numba (about a second); only the CPU single-set path needs it.
    from dml_core.evaluation.knn_symmetric import rank_symmetric

    x = embeddings.to(torch.float32).numpy()
    y = labels.cpu().numpy()
    first_rank, neighbours = rank_symmetric(x, y, k)
    _, inverse, class_sizes = np.unique(y, return_inverse=True, return_counts=True)
    return NeighbourRanking(
        first_positive_rank=first_rank,
        num_positives=class_sizes[inverse.reshape(-1)] - 1,
        neighbours=neighbours,
        neighbour_is_positive=y[neighbours] == y[:, None],
        search=SYMMETRIC_SEARCH,
    )
