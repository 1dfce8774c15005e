"""How generated tables and figures name datasets, rows and runs: one place, so both say the same thing."""

from __future__ import annotations

from dml_core.published import PublishedRow

DATASET_NAMES = {"cub200": "CUB-200-2011", "cars196": "Cars196", "sop": "SOP", "inshop": "In-Shop"}


def dataset_name(dataset: str) -> str:
    """As the papers print it.

    >>> dataset_name("cub200"), dataset_name("uci:iris"), dataset_name("uci:coil20")
    ('CUB-200-2011', 'Iris', 'Coil20')
    """
    if dataset.startswith("uci:"):
        return dataset.removeprefix("uci:").capitalize()
    return DATASET_NAMES.get(dataset, dataset)


def row_label(row: PublishedRow, with_dataset: bool = False) -> str:
    """The printed method, its setting and (in a table over several data sets) the data set.

    >>> from dml_core.published import load_published, find_row
    >>> row_label(find_row(load_published("damlrrm"), "table4", "ours-alpha-28-cub200"))
    'OURS (α = 28)'
    >>> row_label(find_row(load_published("anml"), "table2", "nca-uci-iris"), with_dataset=True)
    'NCA · Iris'
    """
    label = f"{row.method} ({row.setting})" if row.setting else row.method
    return f"{label} · {dataset_name(row.dataset)}" if with_dataset else label


def variant_label(variant: str) -> str:
    """A run under non-default readings (``a=x~b=y``) as a reader sees it; "" for the default reading.

    >>> variant_label("cgml.graphs=halves~damlrrm.lr=1e-3"), variant_label("")
    ('readings cgml.graphs=halves, damlrrm.lr=1e-3', '')
    """
    return "readings " + ", ".join(variant.split("~")) if variant else ""
