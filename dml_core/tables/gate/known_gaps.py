"""Gaps between our numbers and the paper's whose cause we have established, and the reviewed waivers among them:
``papers/<key>/known_gaps.yaml`` (optional; the format: docs/nightly.md#waivers). The tables link each such row's
reproduced cells to the explanation, so a reader who sees "above" or "below" finds the why in one click.

A ``waiver`` is a reviewed decision that the published number of these cells cannot be reproduced as printed (an
impossible mean/std pair, a misprint): a number below it is shown "waived" and does not fail the nightly gate, but
a drop against the previous nightly still does.
"""

from __future__ import annotations

import datetime as dt
import os
from pathlib import Path

import pandas as pd
from pydantic import Field

from dml_core.errors import InputError
from dml_core.output_paths import REPOSITORY_ROOT
from dml_core.published import PAPERS_DIR, PublishedPaper, find_row
from dml_core.schema import StrictModel, load_yaml_model
from dml_core.tables.gate.join import BELOW, WAIVED, compared_metrics
from dml_core.vocabulary import PaperKey

KNOWN_GAPS_FILE = "known_gaps.yaml"


class Waiver(StrictModel):
    """Which of the gap's cells the gate does not compare with the published number, and where that was reviewed."""

    metrics: list[str] = Field(min_length=1)  # of every row of the gap
    reviewed_in: str = Field(min_length=1)  # where the exception was reviewed (an issue, a pull request)
    reviewed_on: dt.date


class KnownGap(StrictModel):
    table: str
    rows: list[str] = Field(min_length=1)
    why: str = Field(min_length=1)  # one line, shown as the link's title
    see: str = Field(pattern=r"^[^/#][^#]*\.md(#[a-z0-9-]+)?$")  # a repository Markdown file, optionally #anchor
    waiver: Waiver | None = None

    def waives(self, table: str, row: str, metric: str) -> bool:
        return self.waiver is not None and table == self.table and row in self.rows and metric in self.waiver.metrics


class KnownGaps(StrictModel):
    paper: PaperKey
    gaps: list[KnownGap] = Field(default_factory=list)

    def for_row(self, table: str, row: str) -> KnownGap | None:
        return next((gap for gap in self.gaps if gap.table == table and row in gap.rows), None)

    def waiver_for(self, table: str, row: str, metric: str) -> KnownGap | None:
        """The gap whose waiver covers this cell, if any."""
        return next((gap for gap in self.gaps if gap.waives(table, row, metric)), None)


def known_gaps_path(key: str, papers_dir: str | os.PathLike | None = None) -> Path:
    return Path(papers_dir or PAPERS_DIR) / key / KNOWN_GAPS_FILE


def load_known_gaps(
    paper: PublishedPaper, papers_dir: str | os.PathLike | None = None, repository: Path = REPOSITORY_ROOT
) -> KnownGaps:
    """The paper's known gaps (none when it has no file); rows must exist, ``see`` must name a file, and a waiver's
    metrics must be published for every row of its gap."""
    key = paper.paper.key
    path = known_gaps_path(key, papers_dir)
    if not path.is_file():
        return KnownGaps(paper=key)
    gaps = load_yaml_model(path, KnownGaps, "known gaps file")
    if gaps.paper != key:
        raise InputError(f"{path}: field paper: expected {key!r} (its folder), found {gaps.paper!r}")
    for index, gap in enumerate(gaps.gaps):
        for row_id in gap.rows:
            try:
                row = find_row(paper, gap.table, row_id)
            except InputError as error:
                raise InputError(f"{path}: field gaps.{index}.rows: {error}") from None
            unknown = [metric for metric in (gap.waiver.metrics if gap.waiver else []) if metric not in row.metrics]
            if unknown:
                raise InputError(
                    f"{path}: field gaps.{index}.waiver.metrics: expected metrics row {row_id} publishes "
                    f"({', '.join(compared_metrics(row))}), found {', '.join(unknown)}"
                )
        if not (repository / gap.see.split("#")[0]).is_file():
            raise InputError(f"{path}: field gaps.{index}.see: expected a file of the repository, found {gap.see!r}")
    return gaps


def apply_waivers(frame: pd.DataFrame, gaps: KnownGaps) -> pd.DataFrame:
    """The long form with every waived line that is below its published number marked ``waived`` instead (a
    waived line within or above the gate keeps its status: the waiver is not needed there)."""
    waived = [
        line.status == BELOW and gaps.waiver_for(line.table, line.row, line.metric) is not None
        for line in frame.itertuples()
    ]
    marked = frame.copy()
    marked.loc[pd.Series(waived, index=frame.index, dtype=bool), "status"] = WAIVED
    return marked
