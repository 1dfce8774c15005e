"""Build one paper's table file: load its results and recipes, join them to the published rows, draw the
plots and write ``tables/[smoke/]<key>.md`` (plots in ``tables/[smoke/]<key>/``)."""

from __future__ import annotations

from collections import defaultdict
from dataclasses import dataclass
from pathlib import Path

import pandas as pd

from dml_core.atomic_io import atomic_write_text
from dml_core.output_paths import results_folder, tables_markdown
from dml_core.published import load_published
from dml_core.tables import markdown, plots
from dml_core.results import ResultsFile
from dml_core.tables.join import join, load_results_folder, planned_linear_targets, planned_targets, timing_frame
from dml_core.tables.tolerances import Tolerances


@dataclass(frozen=True)
class PaperTables:
    """What was built for one paper: the joined lines (for ``--check``) and the Markdown file written."""

    key: str
    frame: pd.DataFrame
    markdown_path: Path


def build_paper_tables(
    key: str,
    *,
    results_root: Path,
    tables_root: Path,
    recipes_dir: Path,
    tolerances: Tolerances,
    smoke: bool,
    papers_dir: Path | None = None,
    draw_plots: bool = True,
) -> PaperTables:
    """Join ``<results_root>/[smoke/]<key>/*.json`` and ``<recipes_dir>/<key>/*.yaml`` to the paper's
    published rows and write the Markdown (and plots) under ``tables_root``."""
    paper = load_published(key, papers_dir)
    loaded = load_results_folder(results_folder(results_root, key, smoke), smoke)
    planned = planned_targets(recipes_dir, key)
    planned_linear = planned_linear_targets(recipes_dir, key)
    frame = join(paper, loaded, tolerances, {**planned, **planned_linear})
    timing = timing_frame(paper, loaded, planned)
    path = tables_markdown(tables_root, key, smoke)
    plot_dir = path.with_suffix("")
    recall, curves = {}, {}
    if draw_plots:
        runs = defaultdict(list)
        for item in loaded:
            if isinstance(item.results, ResultsFile):  # linear runs have no training curve
                runs[item.results.recipe.id].append(item.results)
        recall = plots.recall_plots(frame, plot_dir, smoke)
        curves = plots.curve_plots(runs, plot_dir, smoke)
    targeted = set(planned) | set(planned_linear) | {(t.table, t.row) for item in loaded for t in item.results.targets}
    unplanned = sum(1 for table in paper.tables for row in table.rows if (table.id, row.id) not in targeted)
    text = markdown.render(
        paper,
        frame,
        timing,
        loaded,
        tolerances,
        smoke=smoke,
        unplanned_rows=unplanned,
        recipes=len({recipe for recipes in planned.values() for recipe in recipes}),
        recall_plots=recall,
        curve_plots=curves,
        markdown_dir=path.parent,
    )
    atomic_write_text(path, text)
    return PaperTables(key, frame, path)
