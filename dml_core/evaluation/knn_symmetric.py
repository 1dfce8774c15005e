"""Single-set neighbour ranking on the CPU: half the distance matrix, one fused pass over it.

In the single-set protocol the queries are the gallery, so one GEMM per pair of class-aligned blocks serves both
blocks' rows, and a compiled kernel (numba) counts ranks, breaks ties and keeps the top-k in one pass. It gives
``knn.rank_neighbours``'s ranking for ``self_index = arange(n)`` under the same rule, though its distances come from
other GEMM calls and may differ in the last bit (docs/performance.md).
"""

from __future__ import annotations

import os

import numba
import numpy as np
import torch

# numba would pick GNU OpenMP (torch loads it), under which a process that forks after a parallel call
# (DataLoader workers, multiprocessing) is terminated. The built-in work queue is fork-safe; it is not
# safe for concurrent calls from several Python threads, which this project never makes.
if "NUMBA_THREADING_LAYER" not in os.environ:
    numba.config.THREADING_LAYER = "workqueue"

# Rows per block (blocks end at class boundaries, so a block may be longer by one class).
DEFAULT_BLOCK_ROWS = 2048
_NO_INDEX = np.iinfo(np.int64).max


@numba.njit(inline="always")
def _before(d, index, worst_d, worst_index):
    """Whether ``(d, index)`` ranks before ``(worst_d, worst_index)``: distance, then index."""
    return d < worst_d or (d == worst_d and index < worst_index)


@numba.njit(inline="always")
def _insert(top_d, top_i, worst, row, d, index):
    """Insert ``(d, index)`` into row ``row`` of the sorted top-k buffers (its last entry drops out);
    ``worst[row]`` mirrors the last distance so that scans can compare against a contiguous array."""
    pos = top_d.shape[1] - 1
    while pos > 0 and _before(d, index, top_d[row, pos - 1], top_i[row, pos - 1]):
        top_d[row, pos] = top_d[row, pos - 1]
        top_i[row, pos] = top_i[row, pos - 1]
        pos -= 1
    top_d[row, pos] = d
    top_i[row, pos] = index
    worst[row] = top_d[row, top_d.shape[1] - 1]


@numba.njit(parallel=True, cache=True)
def _diagonal_block(gram, sq, index, class_start, class_stop, threshold, nearest, count, top_d, top_i, worst):
    """Rows of one diagonal block against the block itself: thresholds, counts, top-k.

    All arrays are block-local (row ``r`` of the block); ``class_start/stop`` give each row's class
    range within the block. ``threshold[r]`` becomes the distance to the nearest same-class item
    (``-inf`` if none: nothing is then counted), ``nearest[r]`` its index.
    """
    rows = gram.shape[0]
    k = top_d.shape[1]
    for r in numba.prange(rows):
        best_d = np.float32(np.inf)
        best_i = _NO_INDEX
        for c in range(class_start[r], class_stop[r]):
            if c != r:
                d = sq[c] - np.float32(2.0) * gram[r, c]
                if _before(d, index[c], best_d, best_i):
                    best_d = d
                    best_i = index[c]
        if best_i == _NO_INDEX:
            best_d = np.float32(-np.inf)
            best_i = -1
        threshold[r] = best_d
        nearest[r] = best_i
        n_before = 0
        for c in range(rows):
            d = sq[c] - np.float32(2.0) * gram[r, c]
            if c < class_start[r] or c >= class_stop[r]:
                n_before += (d < best_d) | ((d == best_d) & (index[c] < best_i))
            if k and c != r and _before(d, index[c], top_d[r, k - 1], top_i[r, k - 1]):
                _insert(top_d, top_i, worst, r, d, index[c])
        count[r] += n_before


@numba.njit(parallel=True, cache=True)
def _off_diagonal_rows(gram, sq_cols, index_cols, threshold, nearest, count, top_d, top_i, worst):
    """Rows of block ``I`` against block ``J != I`` (all pairs of different classes).

    One vectorised pass over a row counts the items strictly closer than the row's nearest same-class
    item, notes whether any is exactly as close (the index tie rule then needs a second look), and
    finds the first and last item that may enter the row's top-k: only that span is looked at again
    (after the first blocks, a handful of items per row and block).
    """
    rows, cols = gram.shape
    k = top_d.shape[1]
    for r in numba.prange(rows):
        best_d = threshold[r]
        best_i = nearest[r]
        limit = worst[r]
        n_closer = 0
        n_equal = 0
        first = cols
        last = -1
        for c in range(cols):
            d = sq_cols[c] - np.float32(2.0) * gram[r, c]
            n_closer += d < best_d
            n_equal += d == best_d
            candidate = d <= limit
            first = min(first, c if candidate else cols)
            last = max(last, c if candidate else -1)
        if n_equal:
            for c in range(cols):
                d = sq_cols[c] - np.float32(2.0) * gram[r, c]
                n_closer += (d == best_d) & (index_cols[c] < best_i)
        count[r] += n_closer
        if k:
            for c in range(first, last + 1):
                d = sq_cols[c] - np.float32(2.0) * gram[r, c]
                if _before(d, index_cols[c], top_d[r, k - 1], top_i[r, k - 1]):
                    _insert(top_d, top_i, worst, r, d, index_cols[c])


@numba.njit(parallel=True, cache=True)
def _off_diagonal_cols(gram, sq_rows, index_rows, threshold, nearest, count, top_d, top_i, worst, n_chunks):
    """Columns of block ``J`` against block ``I``: the same Gram block, read for its columns' queries.

    Each thread takes a range of columns and walks the block row by row (contiguous reads), keeping per
    column the items strictly closer than its threshold and those closer or equal; a column where the
    two differ had a tie in this block and is re-read down its rows for the index rule (rare). Top-k
    candidates are found as in ``_off_diagonal_rows``, by the span of a row that may hold any.
    """
    rows, cols = gram.shape
    k = top_d.shape[1]
    width = (cols + n_chunks - 1) // n_chunks
    for chunk in numba.prange(n_chunks):
        lo = chunk * width
        hi = min(cols, lo + width)
        n = max(hi - lo, 0)
        closer = np.zeros(n, dtype=np.int32)
        closer_or_equal = np.zeros(n, dtype=np.int32)
        thr = threshold[lo:hi]
        wst = worst[lo:hi]
        for r in range(rows):
            sq_r = sq_rows[r]
            g = gram[r, lo:hi]
            first = n
            last = -1
            for c in range(n):
                d = sq_r - np.float32(2.0) * g[c]
                closer[c] += d < thr[c]
                closer_or_equal[c] += d <= thr[c]
                candidate = d <= wst[c]
                first = min(first, c if candidate else n)
                last = max(last, c if candidate else -1)
            if k:
                index_r = index_rows[r]
                for c in range(first, last + 1):
                    d = sq_r - np.float32(2.0) * g[c]
                    if _before(d, index_r, top_d[lo + c, k - 1], top_i[lo + c, k - 1]):
                        _insert(top_d, top_i, worst, lo + c, d, index_r)
        for c in range(n):
            if closer_or_equal[c] != closer[c]:
                for r in range(rows):
                    d = sq_rows[r] - np.float32(2.0) * gram[r, lo + c]
                    closer[c] += (d == thr[c]) & (index_rows[r] < nearest[lo + c])
            count[lo + c] += closer[c]


def class_blocks(sorted_labels: np.ndarray, block_rows: int = DEFAULT_BLOCK_ROWS) -> list[tuple[int, int]]:
    """Cut class-sorted rows into ``[start, stop)`` blocks of about ``block_rows``, at class boundaries.

    >>> class_blocks(np.array([0, 0, 1, 1, 1, 2, 3, 3]), block_rows=3)
    [(0, 5), (5, 8)]
    """
    boundaries = np.flatnonzero(np.diff(sorted_labels)) + 1
    ends = np.append(boundaries, len(sorted_labels))
    blocks, start = [], 0
    for end in ends:
        if end - start >= block_rows or end == len(sorted_labels):
            blocks.append((start, int(end)))
            start = int(end)
    return blocks


def rank_symmetric(
    embeddings: np.ndarray, labels: np.ndarray, k: int, block_rows: int = DEFAULT_BLOCK_ROWS
) -> tuple[np.ndarray, np.ndarray]:
    """First-positive rank (``-1`` if none) and the first ``k`` neighbours of every item among the others.

    ``embeddings`` float32 (n, d), ``labels`` int (n,). Indices and order are the input's.
    """
    n = len(embeddings)
    order = np.argsort(labels, kind="stable")
    x = np.ascontiguousarray(embeddings[order], dtype=np.float32)
    sorted_labels = labels[order]
    sq = np.einsum("ij,ij->i", x, x)
    index = order.astype(np.int64)
    blocks = class_blocks(sorted_labels, block_rows)

    class_id = np.concatenate([[0], np.cumsum(np.diff(sorted_labels) != 0)])
    starts = np.searchsorted(class_id, class_id, side="left")
    stops = np.searchsorted(class_id, class_id, side="right")

    threshold = np.empty(n, dtype=np.float32)
    nearest = np.empty(n, dtype=np.int64)
    count = np.zeros(n, dtype=np.int64)
    top_d = np.full((n, k), np.inf, dtype=np.float32)
    top_i = np.full((n, k), _NO_INDEX, dtype=np.int64)
    worst = np.full(n, np.inf, dtype=np.float32)  # top_d[:, -1], kept contiguous
    # As many threads as torch uses (it follows OMP_NUM_THREADS / torch.set_num_threads), so a caller that limits
    # its threads limits these too; numba's own default would be every core.
    numba.set_num_threads(max(1, min(torch.get_num_threads(), numba.config.NUMBA_NUM_THREADS)))
    n_chunks = numba.get_num_threads()

    for start, stop in blocks:
        xb = x[start:stop]
        _diagonal_block(
            xb @ xb.T, sq[start:stop], index[start:stop], starts[start:stop] - start,
            stops[start:stop] - start, threshold[start:stop], nearest[start:stop], count[start:stop],
            top_d[start:stop], top_i[start:stop], worst[start:stop],
        )  # fmt: skip
    for b, (r0, r1) in enumerate(blocks):
        for c0, c1 in blocks[b + 1 :]:
            gram = x[r0:r1] @ x[c0:c1].T
            _off_diagonal_rows(
                gram, sq[c0:c1], index[c0:c1], threshold[r0:r1], nearest[r0:r1], count[r0:r1],
                top_d[r0:r1], top_i[r0:r1], worst[r0:r1],
            )  # fmt: skip
            _off_diagonal_cols(
                gram, sq[r0:r1], index[r0:r1], threshold[c0:c1], nearest[c0:c1], count[c0:c1],
                top_d[c0:c1], top_i[c0:c1], worst[c0:c1], n_chunks,
            )  # fmt: skip

    first_rank = np.empty(n, dtype=np.int64)
    first_rank[order] = np.where(nearest >= 0, count, -1)
    neighbours = np.empty((n, k), dtype=np.int64)
    neighbours[order] = top_i
    return first_rank, neighbours
