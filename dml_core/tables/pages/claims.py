"""The papers' own conclusions, as comparisons over their published rows: ``papers/<key>/claims.yaml``.

A claim quotes the sentence (and names its section) and encodes what the paper's tables must show for it to be
true, as comparisons. A comparison says that each ``better`` row beats each ``worse`` row on each metric (of
``table``, the claim's when the comparison names none): by at least ``by`` points when ``by`` is given (the
paper's own margin; ``by: 0`` means "at least as good"), strictly otherwise. A comparison holds when all of
these pairs do; the claim holds when all its comparisons do, or ``at_least`` of them where the paper says
"most". The test suite checks every claim against the published numbers, so the encoding is right; the table
builder evaluates each on the reproduced numbers (``dml_core.tables.pages.claim_verdicts``).

>>> claims = load_claims("damlrrm")
>>> [c.id for c in claims.claims][:2]
['ours-best-in-most-cells', 'alpha-30-best']
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from pydantic import Field, field_validator, model_validator

from dml_core.errors import InputError
from dml_core.published import PAPERS_DIR, PublishedPaper, find_row, load_published
from dml_core.schema import StrictModel, by_id, load_yaml_model, require_unique_ids
from dml_core.vocabulary import PaperKey

CLAIMS_FILE = "claims.yaml"


class Comparison(StrictModel):
    """Each of ``better`` beats each of ``worse`` on each of ``metrics`` (by ``by`` points, if given)."""

    table: str | None = None
    better: list[str] = Field(min_length=1)
    worse: list[str] = Field(min_length=1)
    metrics: list[str] = Field(min_length=1)
    by: float | None = Field(default=None, ge=0)

    @field_validator("better", "worse", "metrics", mode="before")
    @classmethod
    def _one_or_many(cls, value: Any) -> Any:
        return [value] if isinstance(value, str) else value


class Claim(StrictModel):
    """One conclusion of the paper: the sentence, where it is, and the comparisons that encode it."""

    id: str = Field(pattern=r"^[a-z0-9][a-z0-9.-]*$")
    section: str = Field(min_length=1)
    quote: str = Field(min_length=1)
    table: str | None = None
    at_least: int | None = Field(default=None, ge=1)
    note: str | None = None
    comparisons: list[Comparison] = Field(min_length=1)

    @model_validator(mode="after")
    def _complete(self) -> Claim:
        for index, comparison in enumerate(self.comparisons):
            if comparison.table is None and self.table is None:
                raise ValueError(f"comparisons[{index}]: no table (give the claim's or the comparison's)")
        if self.at_least is not None and self.at_least > len(self.comparisons):
            raise ValueError(f"at_least: {self.at_least} is more than the {len(self.comparisons)} comparisons")
        return self

    @property
    def required(self) -> int:
        """How many comparisons must hold."""
        return self.at_least if self.at_least is not None else len(self.comparisons)

    def pairs(self, index: int) -> list[Pair]:
        """The (better row, worse row, metric) pairs comparison ``index`` stands for."""
        comparison = self.comparisons[index]
        table = comparison.table or self.table
        assert table is not None  # checked by the validator
        return [
            Pair(table, better, worse, metric, comparison.by)
            for better in comparison.better
            for worse in comparison.worse
            for metric in comparison.metrics
        ]


class PaperClaims(StrictModel):
    """A whole ``claims.yaml``."""

    paper: PaperKey
    claims: list[Claim] = Field(min_length=1)

    @model_validator(mode="after")
    def _unique_ids(self) -> PaperClaims:
        require_unique_ids((claim.id for claim in self.claims), "claim ids")
        return self


@dataclass(frozen=True)
class Pair:
    """One atomic comparison: ``better`` minus ``worse`` on ``metric`` of ``table`` (at least ``by``)."""

    table: str
    better: str
    worse: str
    metric: str
    by: float | None

    def holds(self, difference: float) -> bool:
        """Whether a difference (better minus worse) satisfies the pair, at the printed precision.

        >>> Pair("t", "a", "b", "R@1", None).holds(0.0), Pair("t", "a", "b", "R@1", 1.9).holds(67.6 - 65.7)
        (False, True)
        """
        margin = round(difference - (self.by or 0.0), 9)
        return margin >= 0 if self.by is not None else margin > 0


def published_value(paper: PublishedPaper, table: str, row: str, metric: str) -> float:
    """A published number a claim names; :class:`InputError` when the row does not print that metric."""
    found = find_row(paper, table, row)
    if metric not in found.metrics:
        raise InputError(
            f"paper {paper.paper.key} {table} {row}: no published {metric} (printed: {', '.join(found.metrics)})"
        )
    return found.metrics[metric]


def published_difference(paper: PublishedPaper, pair: Pair) -> float:
    """The pair's better-minus-worse difference on the published numbers."""
    better = published_value(paper, pair.table, pair.better, pair.metric)
    return better - published_value(paper, pair.table, pair.worse, pair.metric)


def holds_on_published(claim: Claim, paper: PublishedPaper) -> bool:
    """Whether the paper's own numbers satisfy the claim as encoded."""
    held = 0
    for index in range(len(claim.comparisons)):
        held += all(pair.holds(published_difference(paper, pair)) for pair in claim.pairs(index))
    return held >= claim.required


def claims_path(key: str, papers_dir: str | os.PathLike | None = None) -> Path:
    """``<papers_dir>/<key>/claims.yaml`` (default: the repository's ``papers/``)."""
    return Path(papers_dir or PAPERS_DIR) / key / CLAIMS_FILE


def load_claims(key: str, papers_dir: str | os.PathLike | None = None) -> PaperClaims:
    """Load and validate one paper's claims; every row and metric they name must be published.

    Every problem raises :class:`InputError` naming the file, the claim and the field.
    """
    path = claims_path(key, papers_dir)
    claims = load_yaml_model(path, PaperClaims, "claims file", by_id({"claims": "claim"}))
    if claims.paper != key:
        raise InputError(f"{path}: field paper: expected {key!r} (its folder), found {claims.paper!r}")
    paper = load_published(key, papers_dir)
    for claim in claims.claims:
        for index in range(len(claim.comparisons)):
            for pair in claim.pairs(index):
                for row in (pair.better, pair.worse):
                    try:
                        published_value(paper, pair.table, row, pair.metric)
                    except InputError as error:
                        raise InputError(f"{path}: claim {claim.id}, comparisons[{index}]: {error}") from None
    return claims
