"""The fair comparison's build: the study's sections (``study``) with each dataset's validation search (``search``),
the declared hypotheses judged together under Holm's correction over the study's family, every other comparison
alone (exploratory, unadjusted), written as ``tables/[mini/]fair.md``, its CSV (``page``) and its figure
(``figure``)."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import replace
from pathlib import Path

from dml_core.atomic_io import atomic_write_text
from dml_core.output_paths import RECIPES_DIR, tables_markdown
from dml_core.published import load_published
from dml_core.recipes.study import load_study
from dml_core.tables.fair.claims import load_fair_claims
from dml_core.tables.fair.figure import fair_figure
from dml_core.tables.fair.page import fair_csv, fair_markdown
from dml_core.tables.fair.search import search_section
from dml_core.tables.fair.study import (
    Comparison,
    DatasetSection,
    FairTables,
    dataset_section,
    is_search_variant,
    load_fair_runs,
    table_rule,
)
from dml_core.tables.fair.verdicts import judged
from dml_core.tier import Tier
from dml_core.vocabulary import FAIR_DATASETS, FAIR_KEY


def _judged(comparisons: Sequence[Comparison], tables: FairTables, family_size: int) -> list[Comparison]:
    """``comparisons`` with their verdicts in a family of ``family_size`` (those without a difference count as
    untested in it)."""
    study = tables.study
    measured = [c for c in comparisons if c.difference is not None]
    margins = [study.equivalence_margin[c.metric] for c in measured]  # the study declares one per metric it compares
    differences = [c.difference for c in measured if c.difference is not None]
    verdicts = iter(judged(differences, family_size, study.level, margins, study.power))
    return [replace(c, verdict=next(verdicts)) if c.difference is not None else c for c in comparisons]


def _alone(comparisons: Sequence[Comparison], tables: FairTables) -> list[Comparison]:
    """Each of ``comparisons`` judged alone: exploratory, unadjusted."""
    return [_judged([comparison], tables, 1)[0] for comparison in comparisons]


def with_verdicts(tables: FairTables) -> FairTables:
    """``tables`` with the declared hypotheses of every section judged in one family (Holm over the study's family
    for this tier) and every other comparison judged alone."""
    sections: list[DatasetSection] = [*tables.sections, *(search.section for search in tables.searches)]
    declared = iter(_judged([c for s in sections for c in s.hypotheses], tables, tables.family_size))
    for section in sections:
        section.hypotheses = [next(declared) for _ in section.hypotheses]
        section.exploratory = _alone(section.exploratory, tables)
        section.controls = _alone(section.controls, tables)
        printed = _alone([gain.comparison for gain in section.printed], tables)
        section.printed = [replace(gain, comparison=c) for gain, c in zip(section.printed, printed, strict=True)]
    return tables


def build_fair_tables(
    results_root: Path,
    tier: Tier,
    papers_dir: Path | None = None,
    datasets: Sequence[str] = FAIR_DATASETS,
    recipes_dir: Path = RECIPES_DIR,
) -> FairTables:
    """The study's sections, one per dataset, from ``<results_root>/[mini/]fair/``, under the design of
    ``<recipes_dir>/fair/study.yaml``."""
    study = load_study(recipes_dir, FAIR_KEY)
    runs, folder = load_fair_runs(results_root, tier, study.methods)
    claims = load_fair_claims(papers_dir, study)
    papers = {key: load_published(key, papers_dir) for key in study.methods.papers}
    table, rule = [run for run in runs if run.variant == ""], table_rule(runs, folder)
    sections = [
        dataset_section(d, [r for r in table if r.dataset == d], rule, study, tier, claims, papers) for d in datasets
    ]
    searches = [search_section(s, [r for r in runs if r.dataset == s.dataset], rule, study, tier) for s in sections]
    left_out: dict[str, int] = {}
    for run in runs:
        if run.variant and not is_search_variant(run.variant):
            left_out[run.variant] = left_out.get(run.variant, 0) + 1
    found = [search for search in searches if search is not None]
    return with_verdicts(FairTables(tier, study, sections, folder, len(runs), rule, found, left_out))


def write_fair_tables(
    results_root: Path, tables_root: Path, tier: Tier, papers_dir: Path | None = None, recipes_dir: Path = RECIPES_DIR
) -> list[Path]:
    """Write ``<tables_root>/[mini/]fair.md``, ``fair.csv`` and ``fair.png`` beside it; return the files written
    (no figure when no method ran)."""
    tables = build_fair_tables(Path(results_root), tier, papers_dir, recipes_dir=recipes_dir)
    path = tables_markdown(Path(tables_root), FAIR_KEY, tier)
    figure = fair_figure(tables, path.with_suffix(".png"))
    written = [atomic_write_text(path, fair_markdown(tables, figure)), fair_csv(tables, path.with_suffix(".csv"))]
    if figure is None:
        path.with_suffix(".png").unlink(missing_ok=True)  # a figure of an earlier build no longer drawn
    return written + ([figure] if figure is not None else [])
