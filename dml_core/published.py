"""The five papers' published tables: pydantic models and the loader for ``papers/<key>/published.yaml``.

These are the numbers users diff their reproductions against, so the loader is strict (``dml_core.schema``: unknown
fields are errors) and names the file, table, row and field of every error. How rows and tables are named (ids a
recipe's targets use, stable once published) is in papers/README.md.

>>> paper = load_published("damlrrm")
>>> find_row(paper, "table1", "ours-cub200").metrics["R@1"]
55.1
"""

from __future__ import annotations

import functools
import os
import re
from pathlib import Path
from typing import Annotated, Literal

from pydantic import Field, field_validator, model_validator

from dml_core.errors import InputError
from dml_core.schema import StrictModel, by_id, parse_model, parse_yaml_mapping, require_unique_ids
from dml_core.vocabulary import IMAGE_DATASETS, PAPER_KEYS, PaperKey, PublishedBackbone, suite_backbone

# The repository's papers/ folder (beside the dml_core package).
PAPERS_DIR = Path(__file__).resolve().parent.parent / "papers"

FIXED_METRICS: tuple[str, ...] = (
    "NMI",
    "F1",
    "MAP@R",
    "accuracy",
    "accuracy_std",
    "iterations_per_second",
    "training_hours",
)
# Metrics printed in percent: a value outside [0, 100] is a transcription slip (a fraction, a lost decimal).
_PERCENT_METRICS = frozenset({"NMI", "F1", "MAP@R", "accuracy", "accuracy_std"})

_RECALL_KEY = re.compile(r"R@[1-9][0-9]*")
_UCI_DATASET = re.compile(r"uci:[a-z0-9][a-z0-9_-]*")
_TABLE_ID = re.compile(r"table[1-9][0-9]*")
_ROW_ID = re.compile(r"[a-z0-9][a-z0-9.]*(-[a-z0-9.]+)*")

# Strict: a quoted "61.7" or a bool in the YAML is an error, not silently converted.
MetricValue = Annotated[float, Field(strict=True)]


def is_metric_key(key: str) -> bool:
    """Whether ``key`` is an allowed metric name: ``R@<K>`` or one of :data:`FIXED_METRICS`.

    >>> [is_metric_key(k) for k in ("R@1", "R@1000", "NMI", "R@0", "recall@1", "nmi")]
    [True, True, True, False, False, False]
    """
    return key in FIXED_METRICS or _RECALL_KEY.fullmatch(key) is not None


def is_dataset_name(name: str) -> bool:
    """Whether ``name`` is an allowed dataset: one of :data:`IMAGE_DATASETS` or ``uci:<lowercase name>``.

    >>> [is_dataset_name(d) for d in ("cub200", "uci:iris", "uci:Iris", "cars", "uci:")]
    [True, True, False, False, False]
    """
    return name in IMAGE_DATASETS or _UCI_DATASET.fullmatch(name) is not None


def _require_match(pattern: re.Pattern[str], value: str, expected: str) -> str:
    if not pattern.fullmatch(value):
        raise ValueError(f"expected {expected}, found {value!r}")
    return value


_GREEK = {"α": "alpha", "β": "beta", "γ": "gamma", "λ": "lambda"}


def make_row_id(method: str, dataset: str, setting: str | None = None) -> str:
    """The row id the scheme gives a printed method on a dataset (with the setting, when rows need it): the slugs of
    method, setting and dataset joined by ``-`` (papers/README.md).

    >>> make_row_id("OURS", "cub200")
    'ours-cub200'
    >>> make_row_id("LANML+", "uci:iris"), make_row_id("Triplet+N-pair", "sop")
    ('lanml-plus-uci-iris', 'triplet-plus-n-pair-sop')
    >>> make_row_id("OURS", "cub200", setting="α = 28")
    'ours-alpha-28-cub200'
    """
    parts = [method] + ([setting] if setting else []) + [dataset]
    return "-".join(_slug(part) for part in parts)


def _slug(text: str) -> str:
    text = text.lower().replace("+", "-plus-").replace("−", "-minus-")
    for letter, name in _GREEK.items():
        text = text.replace(letter, name)
    return re.sub(r"[^a-z0-9.]+", "-", text).strip("-.")


class PaperInfo(StrictModel):
    """Which paper a file transcribes."""

    key: PaperKey
    title: str = Field(min_length=1)
    venue: str = Field(min_length=1)
    year: int = Field(ge=1990, le=2100)


class PublishedRow(StrictModel):
    """One printed row of a table: one method (and setting) on one dataset."""

    id: str
    method: str = Field(min_length=1)
    proposed: bool
    # The authors cite this row's numbers from another publication (a citation marker on the method name, a
    # 'Publication' column, or the text says so) instead of running it: shown for context (a run of ours may still
    # target it, as damlrrm's Table 6 baselines).
    quoted: bool = False
    dataset: str
    backbone: PublishedBackbone | None = None  # as the paper prints it; ``suite_backbone`` gives the suite's name
    embedding_dim: int | None = Field(default=None, gt=0)
    setting: str | None = None
    metrics: dict[str, MetricValue]
    note: str | None = None

    @field_validator("id")
    @classmethod
    def _id_is_slug(cls, value: str) -> str:
        return _require_match(_ROW_ID, value, "a lowercase slug like 'ours-cub200'")

    @field_validator("dataset")
    @classmethod
    def _known_dataset(cls, value: str) -> str:
        if not is_dataset_name(value):
            raise ValueError(f"expected one of {', '.join(IMAGE_DATASETS)} or uci:<lowercase name>, found {value!r}")
        return value

    @field_validator("metrics")
    @classmethod
    def _known_metrics(cls, value: dict[str, float]) -> dict[str, float]:
        if not value:
            raise ValueError("expected at least one metric, found none")
        for key, number in value.items():
            if not is_metric_key(key):
                raise ValueError(f"expected metric keys R@<K> or one of {', '.join(FIXED_METRICS)}, found {key!r}")
            if number < 0 or ((key in _PERCENT_METRICS or key.startswith("R@")) and number > 100):
                raise ValueError(f"expected {key} in percent (0-100), found {number}")
        return value

    @model_validator(mode="after")
    def _own_rows_are_not_quoted(self) -> PublishedRow:
        if self.quoted and self.proposed:
            raise ValueError("a row cannot be both proposed (the paper's own method) and quoted (another work's)")
        return self

    @property
    def suite_backbone(self) -> str | None:
        """The backbone as recipes and the backbone registry name it (``bn_inception`` for ``bn-inception``)."""
        return None if self.backbone is None else suite_backbone(self.backbone)


class PublishedTable(StrictModel):
    """One table of the paper. ``rows`` may be empty only when ``note`` says why (the text lost the table)."""

    id: str
    caption: str = Field(min_length=1)
    kind: Literal["main", "ablation", "training_time", "other"]
    rows: list[PublishedRow]
    note: str | None = None

    @field_validator("id")
    @classmethod
    def _id_is_table_number(cls, value: str) -> str:
        return _require_match(_TABLE_ID, value, "'table<N>' (arabic digits, lower case)")

    @model_validator(mode="after")
    def _rows_are_consistent(self) -> PublishedTable:
        if not self.rows and not self.note:
            raise ValueError("a table with no rows needs a note saying why")
        seen: set[str] = set()
        for row in self.rows:
            if row.id in seen:
                raise ValueError(f"row id {row.id!r} is not unique in the table")
            seen.add(row.id)
        return self


class PublishedPaper(StrictModel):
    """A whole ``published.yaml``: the paper, free-text notes (e.g. skipped figures), and its tables."""

    paper: PaperInfo
    notes: list[str] = Field(default_factory=list)
    tables: list[PublishedTable] = Field(min_length=1)

    @model_validator(mode="after")
    def _table_ids_unique(self) -> PublishedPaper:
        require_unique_ids((table.id for table in self.tables), "table ids")
        return self

    def table(self, table_id: str) -> PublishedTable:
        """The table with this id; :class:`InputError` listing the ids there are otherwise."""
        for table in self.tables:
            if table.id == table_id:
                return table
        known = ", ".join(table.id for table in self.tables)
        raise InputError(f"paper {self.paper.key}: no table {table_id!r} (tables: {known})")


def find_row(paper: PublishedPaper, table_id: str, row_id: str) -> PublishedRow:
    """The row ``row_id`` of table ``table_id``; :class:`InputError` naming what exists otherwise."""
    table = paper.table(table_id)
    for row in table.rows:
        if row.id == row_id:
            return row
    known = ", ".join(row.id for row in table.rows) or "none"
    raise InputError(f"paper {paper.paper.key} {table_id}: no row {row_id!r} (rows: {known})")


def published_path(key: str, papers_dir: str | os.PathLike | None = None) -> Path:
    """``<papers_dir>/<key>/published.yaml`` (default: the repository's ``papers/``)."""
    return Path(papers_dir or PAPERS_DIR) / key / "published.yaml"


def load_published(key_or_path: str | os.PathLike, papers_dir: str | os.PathLike | None = None) -> PublishedPaper:
    """Load and validate one paper's tables, from a paper key (``"drml"``) or a path to a ``published.yaml``.

    The file must sit in a folder named after its ``paper.key``. Every problem raises :class:`InputError`
    naming the file, the table id, the row (id and index) and the field.
    """
    if isinstance(key_or_path, str) and key_or_path in PAPER_KEYS:
        path = published_path(key_or_path, papers_dir)
    else:
        path = Path(key_or_path)
    if not path.is_file():
        raise InputError(f"{path}: published tables file not found (paper keys: {', '.join(PAPER_KEYS)})")
    return _validated(path, path.read_bytes()).model_copy(deep=True)  # a copy: no caller sees another's edits


@functools.lru_cache(maxsize=16)
def _validated(path: Path, content: bytes) -> PublishedPaper:
    """``content``, read from ``path``, validated once per process: the page and fair builders read each paper's
    tables dozens of times."""
    tree = parse_yaml_mapping(content, path)
    what, locate = "published tables file", by_id({"tables": "table", "rows": "row"})
    paper = parse_model(tree, PublishedPaper, str(path), what, locate)
    if paper.paper.key != path.parent.name:
        raise InputError(f"{path}: paper.key: expected the folder name {path.parent.name!r}, found {paper.paper.key!r}")
    return paper


def load_all(papers_dir: str | os.PathLike | None = None) -> dict[str, PublishedPaper]:
    """Every paper in :data:`PAPER_KEYS`, loaded and validated, keyed by paper key."""
    return {key: load_published(key, papers_dir) for key in PAPER_KEYS}
