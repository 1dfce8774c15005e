"""The fair comparison's build: the study's sections (``study``) with each dataset's validation search
(``search``), every verdict Holm-corrected together, written as ``tables/[mini/]fair.md``, its CSV (``page``) and
its figure (``figure``)."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import replace
from pathlib import Path

from dml_core.atomic_io import atomic_write_text
from dml_core.output_paths import tables_markdown
from dml_core.published import load_published
from dml_core.tables.fair.claims import load_fair_claims
from dml_core.tables.fair.figure import fair_figure
from dml_core.tables.fair.page import fair_csv, fair_markdown
from dml_core.tables.fair.search import search_section
from dml_core.tables.fair.study import FairTables, dataset_section, is_search_variant, load_fair_runs, table_rule
from dml_core.tables.fair.verdicts import holm_adjusted
from dml_core.tier import Tier
from dml_core.vocabulary import FAIR_DATASETS, FAIR_KEY, PAPER_KEYS


def with_holm(tables: FairTables) -> FairTables:
    """``tables`` with every verdict's p-value Holm-adjusted over the page's verdicts (one family)."""
    adjusted = iter(holm_adjusted(tables.all_differences()))
    for section in [*tables.sections, *(search.section for search in tables.searches)]:
        section.differences = {method: next(adjusted) for method in section.differences}
        section.controls = [replace(control, difference=next(adjusted)) for control in section.controls]
    return tables


def build_fair_tables(
    results_root: Path, tier: Tier, papers_dir: Path | None = None, datasets: Sequence[str] = FAIR_DATASETS
) -> FairTables:
    """The study's sections, one per dataset, from ``<results_root>/[mini/]fair/``."""
    runs, folder = load_fair_runs(results_root, tier)
    claims = load_fair_claims(papers_dir)
    papers = {key: load_published(key, papers_dir) for key in PAPER_KEYS}
    table, rule = [run for run in runs if run.variant == ""], table_rule(runs, folder)
    sections = [dataset_section(d, [r for r in table if r.dataset == d], claims, papers) for d in datasets]
    searches = [search_section(s, [r for r in runs if r.dataset == s.dataset], rule) for s in sections]
    left_out: dict[str, int] = {}
    for run in runs:
        if run.variant and not is_search_variant(run.variant):
            left_out[run.variant] = left_out.get(run.variant, 0) + 1
    tables = FairTables(tier, sections, folder, len(runs), rule, [s for s in searches if s is not None], left_out)
    return with_holm(tables)


def write_fair_tables(results_root: Path, tables_root: Path, tier: Tier, papers_dir: Path | None = None) -> list[Path]:
    """Write ``<tables_root>/[mini/]fair.md``, ``fair.csv`` and ``fair.png`` beside it; return the files written
    (no figure when no method ran)."""
    tables = build_fair_tables(Path(results_root), tier, papers_dir)
    path = tables_markdown(Path(tables_root), FAIR_KEY, tier)
    figure = fair_figure(tables, path.with_suffix(".png"))
    written = [atomic_write_text(path, fair_markdown(tables, figure)), fair_csv(tables, path.with_suffix(".csv"))]
    if figure is None:
        path.with_suffix(".png").unlink(missing_ok=True)  # a figure of an earlier build no longer drawn
    return written + ([figure] if figure is not None else [])
