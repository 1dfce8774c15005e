"""What each paper claims over a classic baseline in its own table, for the fair page to show beside this study's
difference from that same baseline: ``papers/fair/claims.yaml``.

An entry names, for one paper method on one dataset, the published table, the method's row there, the metric, and
the rows of the fair study's classic baselines that table prints (``baselines``: fair baseline key -> row id). A
paper that prints no such pair says why instead (``none``). The gain shown is the paper's own difference, method
row minus baseline row, as printed, over each printed baseline the fair study ran: the page sets this study's own
difference from the same baseline beside it, like with like.

>>> claims = load_fair_claims()
>>> gain = claims.entry("damlrrm", "cub200").gain_over("npair", load_published("damlrrm"))
>>> round(gain.value, 1), gain.printed_method
(3.2, 'N-pair')
>>> claims.entry("damlrrm", "cub200").gain_over("multi-similarity", load_published("damlrrm")) is None
True
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path

from pydantic import Field, model_validator

from dml_core.errors import InputError
from dml_core.output_paths import RECIPES_DIR
from dml_core.published import PAPERS_DIR, PublishedPaper, find_row, load_published
from dml_core.recipes.study import Metric, Study, load_study
from dml_core.schema import StrictModel, load_yaml_model
from dml_core.tables.pages.claims import published_value
from dml_core.vocabulary import FAIR_KEY, FairDataset, PaperKey

FAIR_CLAIMS_FILE = "claims.yaml"


@dataclass(frozen=True)
class ClaimedGain:
    """The paper's printed gain of its method over one baseline row, in points of ``metric``."""

    value: float
    metric: str
    table: str
    baseline: str  # the fair baseline key the row stands for
    printed_method: str  # the row's method as printed (``N-pair``, ``ProxyAnchor*``)
    quoted: bool  # the baseline row's numbers are quoted from another publication
    # the transcription's remarks on the two rows (published.yaml notes: misprints, doubts), "row id: note"
    remarks: tuple[str, ...] = ()


class ClaimedPair(StrictModel):
    """One paper method on one dataset: its row and the classic baselines' rows of one published table."""

    method: PaperKey
    dataset: FairDataset
    table: str | None = None
    row: str | None = None
    metric: Metric = "R@1"  # one the study compares (reproduce/fair/study.yaml declares its margin)
    baselines: dict[str, str] = Field(default_factory=dict)  # classic baselines of the study (study.yaml)
    none: str | None = None  # why the paper prints no such pair
    note: str | None = None

    @model_validator(mode="after")
    def _pair_or_reason(self) -> ClaimedPair:
        given = self.table is not None and self.row is not None and bool(self.baselines)
        if self.none is not None and (self.table or self.row or self.baselines):
            raise ValueError("none: given with table, row or baselines; expected one or the other")
        if self.none is None and not given:
            raise ValueError("expected table, row and at least one of baselines, or none: <why not printed>")
        return self

    def gain_over(self, baseline: str, paper: PublishedPaper) -> ClaimedGain | None:
        """The printed gain over the fair ``baseline``; None where the paper prints no pair or not that baseline."""
        if self.none is not None or baseline not in self.baselines:
            return None
        assert self.table is not None and self.row is not None  # checked by the validator
        baseline_row = find_row(paper, self.table, self.baselines[baseline])
        value = published_value(paper, self.table, self.row, self.metric) - published_value(
            paper, self.table, baseline_row.id, self.metric
        )
        rows = (find_row(paper, self.table, self.row), baseline_row)
        remarks = tuple(f"`{row.id}`: {' '.join(row.note.split())}" for row in rows if row.note)
        return ClaimedGain(value, self.metric, self.table, baseline, baseline_row.method, baseline_row.quoted, remarks)


class FairClaims(StrictModel):
    """A whole ``papers/fair/claims.yaml``."""

    claims: list[ClaimedPair] = Field(min_length=1)

    @model_validator(mode="after")
    def _one_entry_each(self) -> FairClaims:
        seen: set[tuple[str, str]] = set()
        for entry in self.claims:
            key = (entry.method, entry.dataset)
            if key in seen:
                raise ValueError(f"method {entry.method} on {entry.dataset}: more than one entry; expected one")
            seen.add(key)
        return self

    def entry(self, method: str, dataset: str) -> ClaimedPair | None:
        return next((e for e in self.claims if e.method == method and e.dataset == dataset), None)


def fair_claims_path(papers_dir: str | os.PathLike | None = None) -> Path:
    """``<papers_dir>/fair/claims.yaml`` (default: the repository's ``papers/``)."""
    return Path(papers_dir or PAPERS_DIR) / FAIR_KEY / FAIR_CLAIMS_FILE


def load_fair_claims(papers_dir: str | os.PathLike | None = None, study: Study | None = None) -> FairClaims:
    """Load the file and check it: each entry's method is one of the ``study``'s papers' methods and its baselines
    the study's classic baselines (default: the repository's ``reproduce/fair/study.yaml``); every row it names is
    in its paper's published.yaml: the table, the method's row and each baseline's row exist, on the entry's
    dataset, and print the metric. Errors name the file and entry."""
    path = fair_claims_path(papers_dir)
    if not path.is_file():
        raise InputError(f"{path}: the fair table's claimed gains file not found")
    claims = load_yaml_model(path, FairClaims, "fair claims file")
    methods = (study or load_study(RECIPES_DIR, FAIR_KEY)).methods
    for index, entry in enumerate(claims.claims):
        where = f"{path}: claims[{index}] ({entry.method} on {entry.dataset})"
        if entry.method not in methods.papers:
            raise InputError(
                f"{where}: field method: expected a paper method of the study ({', '.join(methods.papers)})"
            )
        for baseline in entry.baselines:
            if baseline not in methods.baselines:
                raise InputError(
                    f"{where}: field baselines.{baseline}: expected a classic baseline of the study "
                    f"({', '.join(methods.baselines)}), found {baseline!r}"
                )
        if entry.none is not None:
            continue
        paper = load_published(entry.method, papers_dir)
        assert entry.table is not None and entry.row is not None  # checked by the validator
        for field, row_id in [("row", entry.row), *((f"baselines.{b}", r) for b, r in entry.baselines.items())]:
            try:
                row = find_row(paper, entry.table, row_id)
                published_value(paper, entry.table, row_id, entry.metric)
            except InputError as error:
                raise InputError(f"{where}: field {field}: {error}") from None
            if row.dataset != entry.dataset:
                raise InputError(f"{where}: field {field}: row {row_id} is on {row.dataset}, expected {entry.dataset}")
    return claims
