"""A published table as the paper prints it, with our numbers in its cells.

Every printed row, in the paper's order (methods the authors quoted from other works marked as such), the
paper's metrics as columns. A table over several data sets keeps the paper's shape: one line per method with a
column per data set and metric (gpw Table IV), or, when it prints a single metric, one line per data set with a
column per method (anml Table 2). A row a run of ours reproduces shows published → reproduced (gap) marker; a run
under non-default readings, or a second recipe for the same row, gets a line of its own. A table none of whose
rows has a reproduced number collapses to one line.
"""

from __future__ import annotations

import math
import os
from collections import defaultdict
from dataclasses import dataclass
from pathlib import Path

import pandas as pd

from dml_core.published import PublishedRow, PublishedTable
from dml_core.tables.gate.join import NOT_RUN, compared_metrics
from dml_core.tables.gate.known_gaps import KnownGaps
from dml_core.tables.pages.cells import MISSING, published_text, reproduced_cell, runs_text
from dml_core.tables.pages.labels import dataset_name, row_label, variant_label

QUOTED = "*(quoted)*"
RunKey = tuple[str, int]  # (variant, rank of the recipe among the row's recipes under that variant)


@dataclass(frozen=True)
class RowRuns:
    """The long-form lines of one published row, grouped by run (recipe and variant), default reading first."""

    lines: dict[RunKey, pd.DataFrame]
    recipes: dict[RunKey, str]


def _row_runs(row: PublishedRow, lines: pd.DataFrame) -> RowRuns:
    mine = lines[lines["row"] == row.id]
    runs = list(dict.fromkeys(zip(mine["variant"], mine["recipe"], strict=True)))
    runs.sort(key=lambda run: (run[0] != "", run[0], run[1] != row.id, run[1]))
    grouped, recipes, ranks = {}, {}, defaultdict(int)
    for variant, recipe in runs:
        key = (variant, ranks[variant])
        ranks[variant] += 1
        grouped[key] = mine[(mine["variant"] == variant) & (mine["recipe"] == recipe)].set_index("metric")
        recipes[key] = recipe
    return RowRuns(grouped, recipes)


def has_reproduced_number(lines: pd.DataFrame) -> bool:
    return bool(lines["reproduced"].notna().any())


class _Renderer:
    """Cells and labels of one table (links are relative to the Markdown file's folder)."""

    def __init__(self, table: PublishedTable, lines: pd.DataFrame, gaps: KnownGaps, links_from: Path, root: Path):
        self.table, self.gaps, self.links_from, self.root = table, gaps, links_from, root
        self.runs = {row.id: _row_runs(row, lines) for row in table.rows}

    def cell(self, row: PublishedRow, metric: str, key: RunKey) -> str:
        published = row.metrics.get(metric, math.nan)
        published_std = row.metrics.get(metric + "_std", math.nan)
        found = self.runs[row.id].lines.get(key)
        if found is None or metric not in found.index:
            return published_text(published, published_std) if key == ("", 0) else ""
        line = found.loc[metric]
        plus_minus = line["std"] if not math.isnan(line["std"]) else line["spread"]
        final = line.get("final", math.nan)
        interval = (line["interval_low"], line["interval_high"])  # a single seed's 95% bootstrap interval
        text = reproduced_cell(
            published, published_std, line["status"], line["reproduced"], plus_minus, final, interval=interval
        )
        return text + self.gap_link(row) if not math.isnan(line["reproduced"]) else text

    def gap_link(self, row: PublishedRow) -> str:
        gap = self.gaps.for_row(self.table.id, row.id)
        if gap is None:
            return ""
        target = Path(os.path.relpath(self.root / gap.see.split("#")[0], self.links_from)).as_posix()
        anchor = "#" + gap.see.split("#")[1] if "#" in gap.see else ""
        return f" [why?]({target}{anchor})"

    def runs_column(self, rows: list[PublishedRow], key: RunKey) -> str:
        texts = []
        for row in rows:
            found = self.runs[row.id].lines.get(key)
            if found is None:
                continue
            measured = found[found["reproduced"].notna()]
            if measured.empty:
                texts.append(NOT_RUN if (found["status"] == NOT_RUN).all() else "not evaluated")
            else:
                first = measured.iloc[0]
                protocol = " (not the paper protocol)" if str(first["note"]).startswith("NOT the paper") else ""
                texts.append(runs_text(first["unit"], int(first["samples"]), first["seeds"]) + protocol)
        return ", ".join(dict.fromkeys(texts))

    def keys(self, rows: list[PublishedRow]) -> list[RunKey]:
        keys = {key for row in rows for key in self.runs[row.id].lines} | {("", 0)}
        return sorted(keys, key=lambda k: (k[0] != "", k[0], k[1]))

    def label(self, text: str, rows: list[PublishedRow], key: RunKey) -> str:
        extra = [variant_label(key[0])]
        if key[1] > 0:
            extra.append("recipe " + next(self.runs[r.id].recipes[key] for r in rows if key in self.runs[r.id].recipes))
        if key == ("", 0) and all(row.quoted for row in rows):
            extra.append(QUOTED)
        return " · ".join(filter(None, [text, *extra]))


def _metric_order(rows: list[PublishedRow]) -> list[str]:
    return list(dict.fromkeys(metric for row in rows for metric in compared_metrics(row)))


def paper_shaped(
    table: PublishedTable, lines: pd.DataFrame, gaps: KnownGaps, links_from: Path, root: Path
) -> pd.DataFrame:
    """The display frame of one table (strings), in the paper's shape; see the module docstring."""
    render = _Renderer(table, lines, gaps, links_from, root)
    datasets = list(dict.fromkeys(row.dataset for row in table.rows))
    metrics = _metric_order(table.rows)
    if len(datasets) > 1 and len(metrics) == 1:
        return _by_dataset(table, render, datasets, metrics[0])
    groups: dict[tuple[str, str | None], list[PublishedRow]] = defaultdict(list)
    for row in table.rows:
        groups[(row.method, row.setting)].append(row)
    columns = [(d, m) for d in datasets for m in _metric_order([r for r in table.rows if r.dataset == d])]
    lines_out = []
    for rows in groups.values():
        by_dataset = {row.dataset: row for row in rows}
        for key in render.keys(rows):
            line = {"method": render.label(row_label(rows[0]), rows, key)}
            for dataset, metric in columns:
                header = f"{dataset_name(dataset)} {metric}" if len(datasets) > 1 else metric
                row = by_dataset.get(dataset)
                line[header] = render.cell(row, metric, key) if row and metric in row.metrics else (
                    MISSING if key == ("", 0) else "")  # fmt: skip
            line["runs"] = render.runs_column(rows, key)
            lines_out.append(line)
    return pd.DataFrame(lines_out)


def _by_dataset(table: PublishedTable, render: _Renderer, datasets: list[str], metric: str) -> pd.DataFrame:
    methods = list(dict.fromkeys(row.method for row in table.rows))
    quoted = {m for m in methods if all(r.quoted for r in table.rows if r.method == m)}
    lines_out = []
    for dataset in datasets:
        rows = {row.method: row for row in table.rows if row.dataset == dataset}
        for key in render.keys(list(rows.values())):
            label = " · ".join(filter(None, [dataset_name(dataset), variant_label(key[0])]))
            line = {"data set": label}
            for method in methods:
                header = f"{method} {QUOTED}" if method in quoted else method
                row = rows.get(method)
                line[header] = render.cell(row, metric, key) if row else (MISSING if key == ("", 0) else "")
            line["runs"] = render.runs_column(list(rows.values()), key)
            lines_out.append(line)
    return pd.DataFrame(lines_out)


def table_markdown(shown: pd.DataFrame) -> str:
    """The pipe table (cells are text; a ``|`` inside one is escaped)."""
    escaped = shown.apply(lambda column: column.map(lambda text: str(text).replace("|", "\\|")))
    return escaped.to_markdown(index=False, disable_numparse=True)
