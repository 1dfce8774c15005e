"""Build one paper's tables: load its results and plan, join them to the published rows, judge the claims,
draw one figure per table and write ``tables/[smoke/]<key>.md`` and its long form ``<key>.csv`` (figures in
``tables/[smoke/]<key>/``)."""

from __future__ import annotations

from collections import defaultdict
from dataclasses import dataclass, field
from pathlib import Path

import pandas as pd

from dml_core.atomic_io import atomic_write_text
from dml_core.output_paths import REPOSITORY_ROOT, results_folder, tables_markdown
from dml_core.published import PublishedPaper, load_published
from dml_core.results import ResultsFile
from dml_core.tables.gate.admission import admit_results
from dml_core.tables.gate.join import LoadedResults, Refusal, join, run_variant
from dml_core.tables.gate.known_gaps import apply_waivers, load_known_gaps
from dml_core.tables.gate.long_form import long_form_path, write_long_form
from dml_core.tables.gate.noise import PerQueryIntervals
from dml_core.tables.gate.planned import load_plan
from dml_core.tables.gate.query_intervals import QueryBootstrap
from dml_core.tables.gate.tolerances import Tolerances
from dml_core.tables.pages import figures, markdown
from dml_core.tables.pages.claim_verdicts import ClaimVerdict, evaluate_claims
from dml_core.tables.pages.claims import claims_path, load_claims
from dml_core.tables.pages.timing import timing_frame
from dml_core.tier import Tier


@dataclass(frozen=True)
class PaperTables:
    """What was built for one paper: the long form (also in ``long_form``), and the Markdown file written."""

    key: str
    frame: pd.DataFrame
    markdown_path: Path
    refused: list[Refusal] = field(default_factory=list)  # results files the gate refused (not in the frame)
    notes: list[str] = field(default_factory=list)  # what the gate could not check

    @property
    def long_form(self) -> Path:
        return long_form_path(self.markdown_path)


def paper_verdicts(
    paper: PublishedPaper, frame: pd.DataFrame, tolerances: Tolerances, tier: Tier, papers_dir: Path | None = None
) -> list[ClaimVerdict]:
    """The paper's claims judged on ``frame`` (none when the paper has no claims file)."""
    key = paper.paper.key
    if not claims_path(key, papers_dir).is_file():
        return []
    return evaluate_claims(load_claims(key, papers_dir), paper, frame, tolerances, tier)


def draw_figures(
    paper: PublishedPaper, frame: pd.DataFrame, loaded: list[LoadedResults], folder: Path, tier: Tier
) -> tuple[dict[str, Path], dict[str, Path]]:
    """Each table's comparison figure and training-curves figure (where it has them); PNGs of earlier builds
    that this one did not draw (per-row plots, tables no longer run) are removed."""
    compared, curves = {}, {}
    for table in paper.tables:
        lines = frame[frame["table"] == table.id]
        drawn = figures.table_figure(table, lines, folder / f"{table.id}.png", tier)
        if drawn is not None:
            compared[table.id] = drawn
        if table.kind == "training_time":
            continue  # the same runs' curves are under the tables of their accuracy
        runs: dict[tuple[str, str], list[ResultsFile]] = defaultdict(list)
        for item in loaded:
            results = item.results
            if isinstance(results, ResultsFile) and any(t.table == table.id for t in results.targets):
                runs[(results.recipe.id, run_variant(results))].append(results)
        drawn = figures.curves_figure(table.id, runs, folder / f"{table.id}-curves.png", tier)
        if drawn is not None:
            curves[table.id] = drawn
    kept = {*compared.values(), *curves.values()}
    for stale in folder.glob("*.png") if folder.is_dir() else ():
        if stale not in kept:
            stale.unlink()
    return compared, curves


def build_paper_tables(
    key: str,
    *,
    results_root: Path,
    tables_root: Path,
    recipes_dir: Path,
    tolerances: Tolerances,
    tier: Tier,
    papers_dir: Path | None = None,
    draw_plots: bool = True,
    intervals: PerQueryIntervals | None = None,
    data_root: Path | None = None,  # prepared datasets, for the gate's index check (None: not checked)
) -> PaperTables:
    """Join ``<results_root>/[smoke/]<key>/*.json`` and the runs of ``<recipes_dir>/<key>/`` to the paper's
    published rows and write the Markdown, its CSV long form and the figures under ``tables_root``. A single-seed
    deep run's spread is the 95% bootstrap interval over its test queries, read from the per-query file beside its
    results file (``intervals``, by default ``QueryBootstrap``)."""
    paper = load_published(key, papers_dir)
    plan = load_plan(recipes_dir, key)
    folder = results_folder(results_root, key, tier)
    admission = admit_results(paper, plan, folder, tier=tier, data_root=data_root)  # the gate: refused, not rows
    loaded = admission.admitted
    intervals = intervals if intervals is not None else QueryBootstrap(loaded)  # single seeds: bootstrap over queries
    gaps = load_known_gaps(paper, papers_dir)
    frame = apply_waivers(join(paper, loaded, tolerances, plan.targets, tier=tier, intervals=intervals), gaps)
    path = tables_markdown(tables_root, key, tier)
    write_long_form(long_form_path(path), frame)
    compared, curves = draw_figures(paper, frame, loaded, path.with_suffix(""), tier) if draw_plots else ({}, {})
    inputs = markdown.PageInputs(
        paper=paper,
        frame=frame,
        timing=timing_frame(paper, loaded, plan.targets, plan.schedules),
        loaded=loaded,
        plan=plan,
        tolerances=tolerances,
        verdicts=paper_verdicts(paper, frame, tolerances, tier, papers_dir),
        gaps=gaps,
        tier=tier,
        markdown_dir=path.parent,
        root=REPOSITORY_ROOT,
        figures=compared,
        curves=curves,
        refused=admission.refused,
        gate_notes=admission.notes,
    )
    atomic_write_text(path, markdown.render(inputs))
    return PaperTables(key, frame, path, admission.refused, admission.notes)
