"""Per-dataset evaluation conventions, in one place."""

from __future__ import annotations

from collections.abc import Sequence

from dml_core.registry import Registry

# Recall@K lists as the field reports them (e.g. anml Sec. 7.2.3: CUB and Cars 1-32, SOP 1-1000, In-Shop 1-50).
RECALL_KS: Registry[tuple[int, ...]] = Registry(
    "dataset with a Recall@K list",
    "data.dataset",
    {
        "cub200": (1, 2, 4, 8, 16, 32),
        "cars196": (1, 2, 4, 8, 16, 32),
        "sop": (1, 10, 100, 1000),
        "inshop": (1, 10, 20, 30, 40, 50),
    },
)

# In-Shop ranks a query set against a gallery set; the others rank every test image against the rest.
QUERY_GALLERY_DATASETS = frozenset({"inshop"})


def recall_ks_for(dataset: str) -> tuple[int, ...]:
    return RECALL_KS.lookup(dataset)


def run_recall_ks(dataset: str, declared: Sequence[int] = ()) -> list[int]:
    """A run's Recall@K list: the recipe's own (``evaluation.recall_ks``), else its dataset's; the embedded glyph
    set has none of its own, so 1, 2, 4, 8.

    >>> run_recall_ks("sop"), run_recall_ks("cub200", [1, 5]), run_recall_ks("embedded")
    ([1, 10, 100, 1000], [1, 5], [1, 2, 4, 8])
    """
    if declared:
        return list(declared)
    if dataset == "embedded":
        return [1, 2, 4, 8]
    return list(recall_ks_for(dataset))
