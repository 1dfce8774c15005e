"""Per-query retrieval terms: what one evaluation keeps so that a bootstrap over its queries can be drawn later.

Every retrieval metric is a mean over queries: Recall@K of ``first_positive_rank < K`` (so one rank per query
gives Recall@K for every K), MAP@R of each query's AP@R term, R-Precision of each query's RP term. The evaluator
computes these per query anyway; :class:`PerQuery` keeps them compactly (uint32 ranks, float32 terms: about 12
bytes a query, 0.7 MB for SOP's 60,502 queries before compression).

NMI and clustering F1 are not means over queries (they compare two partitions of all items at once), so they
have no per-query terms and no bootstrap over queries here.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

import numpy as np

from dml_core.errors import InputError

NO_POSITIVE = np.iinfo(np.uint32).max
"""The stored rank of a query without any same-class gallery item (left out of every retrieval metric)."""

_RECALL = re.compile(r"R@([1-9][0-9]*)")


@dataclass(frozen=True, eq=False)
class PerQuery:
    """One evaluation's retrieval terms, one entry per query (in query order).

    ``first_positive_rank``: uint32, the 0-based rank of the nearest same-class item, ``NO_POSITIVE`` if none.
    ``average_precision_at_r`` and ``r_precision``: float32 fractions, NaN for a query without same-class item;
    None when the evaluation did not compute that metric.
    """

    first_positive_rank: np.ndarray
    average_precision_at_r: np.ndarray | None = None
    r_precision: np.ndarray | None = None

    @classmethod
    def from_evaluation(
        cls, first_positive_rank: np.ndarray, average_precision_at_r=None, r_precision=None
    ) -> PerQuery:
        """From the evaluator's arrays (ranks with -1 for no positive; terms in float64, NaN for no positive).

        >>> PerQuery.from_evaluation(np.array([0, -1, 3])).first_positive_rank.tolist() == [0, NO_POSITIVE, 3]
        True
        """
        ranks = np.asarray(first_positive_rank)
        stored = np.where(ranks < 0, NO_POSITIVE, ranks).astype(np.uint32)
        as_float32 = lambda terms: None if terms is None else np.asarray(terms, dtype=np.float32)  # noqa: E731
        return cls(stored, as_float32(average_precision_at_r), as_float32(r_precision))

    def to_arrays(self) -> dict[str, np.ndarray]:
        """The arrays by field name (the terms not computed left out): what a file or a checkpoint stores."""
        fields = {
            "first_positive_rank": self.first_positive_rank,
            "average_precision_at_r": self.average_precision_at_r,
            "r_precision": self.r_precision,
        }
        return {name: array for name, array in fields.items() if array is not None}

    @classmethod
    def from_arrays(cls, arrays: dict[str, np.ndarray], origin: str) -> PerQuery:
        """Back from :meth:`to_arrays`; wrong names, types or lengths are an ``InputError`` naming ``origin``.

        >>> terms = PerQuery.from_evaluation(np.array([0, -1]), np.array([1.0, np.nan]))
        >>> PerQuery.from_arrays(terms.to_arrays(), "x").average_precision_at_r.tolist()
        [1.0, nan]
        >>> PerQuery.from_arrays({"first_positive_rank": np.zeros(2, np.int64)}, "x")
        Traceback (most recent call last):
        dml_core.errors.InputError: x: field first_positive_rank: expected uint32 of shape (2,), found int64 (2,)
        """
        expected = {"first_positive_rank": np.uint32, "average_precision_at_r": np.float32, "r_precision": np.float32}
        unknown = sorted(set(arrays) - set(expected))
        if unknown or "first_positive_rank" not in arrays:
            raise InputError(
                f"{origin}: expected the arrays first_positive_rank[, average_precision_at_r, r_precision], "
                f"found {sorted(arrays)}"
            )
        n = len(arrays["first_positive_rank"])
        for name, array in arrays.items():
            if array.dtype != expected[name] or array.shape != (n,):
                raise InputError(
                    f"{origin}: field {name}: expected {np.dtype(expected[name])} of shape ({n},), found "
                    f"{array.dtype} {array.shape}"
                )
        return cls(arrays["first_positive_rank"], arrays.get("average_precision_at_r"), arrays.get("r_precision"))

    @property
    def has_positive(self) -> np.ndarray:
        return self.first_positive_rank != NO_POSITIVE

    def values(self, metric: str) -> np.ndarray | None:
        """Per-query values of ``metric`` in percent over the queries that count (those with a same-class
        item), whose mean is the metric; None for a metric without per-query terms here (NMI, F1, or one not
        computed).

        >>> terms = PerQuery.from_evaluation(np.array([0, 2, -1]), np.array([1.0, 0.25, np.nan]))
        >>> terms.values("R@1").tolist(), terms.values("R@4").tolist(), terms.values("MAP@R").tolist()
        ([100.0, 0.0], [100.0, 100.0], [100.0, 25.0])
        >>> terms.values("RP"), terms.values("NMI")
        (None, None)
        """
        keep = self.has_positive
        recall = _RECALL.fullmatch(metric)
        if recall:
            return 100.0 * (self.first_positive_rank[keep] < int(recall.group(1))).astype(np.float64)
        terms = {"MAP@R": self.average_precision_at_r, "RP": self.r_precision}.get(metric)
        return None if terms is None else 100.0 * terms[keep].astype(np.float64)
