"""Gaps between our numbers and the paper's whose cause we have established: ``papers/<key>/known_gaps.yaml``
(optional). The tables link each such row's reproduced cells to the explanation, so a reader who sees "above"
or "below" finds the why in one click.

    paper: anml
    gaps:
    - table: table2
      rows: [nca-uci-wine, pnca-uci-wine]
      why: plain Euclidean kNN already scores 98.15 under the same protocol
      see: reproduce/anml/table2_linear.md#full-protocol-results-so-far-tablesanmlmd
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Literal

import yaml
from pydantic import BaseModel, ConfigDict, Field, ValidationError

from dml_core.errors import InputError
from dml_core.output_paths import REPOSITORY_ROOT
from dml_core.published import PAPERS_DIR, PublishedPaper, find_row

KNOWN_GAPS_FILE = "known_gaps.yaml"


class _Strict(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)


class KnownGap(_Strict):
    table: str
    rows: list[str] = Field(min_length=1)
    why: str = Field(min_length=1)  # one line, shown as the link's title
    see: str = Field(pattern=r"^[^/#][^#]*\.md(#[a-z0-9-]+)?$")  # a repository Markdown file, optionally #anchor


class KnownGaps(_Strict):
    paper: Literal["damlrrm", "anml", "gpw", "drml", "cgml"]
    gaps: list[KnownGap] = Field(default_factory=list)

    def for_row(self, table: str, row: str) -> KnownGap | None:
        return next((gap for gap in self.gaps if gap.table == table and row in gap.rows), None)


def load_known_gaps(
    paper: PublishedPaper, papers_dir: str | os.PathLike | None = None, repository: Path = REPOSITORY_ROOT
) -> KnownGaps:
    """The paper's known gaps (none when it has no file); rows must exist and ``see`` must name a file."""
    key = paper.paper.key
    path = Path(papers_dir or PAPERS_DIR) / key / KNOWN_GAPS_FILE
    if not path.is_file():
        return KnownGaps(paper=key)
    try:
        gaps = KnownGaps.model_validate(yaml.safe_load(path.read_text(encoding="utf-8")))
    except yaml.YAMLError as error:
        raise InputError(f"{path}: not valid YAML ({error})") from None
    except ValidationError as error:
        first = error.errors()[0]
        field = ".".join(str(part) for part in first["loc"]) or "(top level)"
        raise InputError(f"{path}: field {field}: {first['msg']}; found {first.get('input')!r:.80}") from None
    if gaps.paper != key:
        raise InputError(f"{path}: field paper: expected {key!r} (its folder), found {gaps.paper!r}")
    for index, gap in enumerate(gaps.gaps):
        for row in gap.rows:
            try:
                find_row(paper, gap.table, row)
            except InputError as error:
                raise InputError(f"{path}: field gaps.{index}.rows: {error}") from None
        if not (repository / gap.see.split("#")[0]).is_file():
            raise InputError(f"{path}: field gaps.{index}.see: expected a file of the repository, found {gap.see!r}")
    return gaps
