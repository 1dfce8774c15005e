"""Build the pages of some keys at one tier: which builder each key takes, the lines it says about the files it
wrote and the files the results gate refused, and the index after them. ``dml tables``, ``dml reproduce`` (in this
process or as jobs) and ``dml nightly`` all call ``build_pages``, so each of them picks the pages, writes the index
and words its lines the same way.

A paper at the full or smoke tier gets ``tables/[smoke/]<key>.md`` with its long form and figures
(``pages.build``); a paper at the mini tier ``tables/mini/<key>.md`` (``pages.mini``); the fair study its page,
CSV and figure (``fair.build``). The index ``tables/[smoke/]README.md`` lists every page built so far at that
tier; the mini tier's pages stand alone, without one.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path

from dml_core.output_paths import RECIPES_DIR
from dml_core.tables.fair.build import write_fair_tables
from dml_core.tables.gate.join import Refusal
from dml_core.tables.gate.tolerances import Tolerances
from dml_core.tables.pages.build import PaperTables, build_paper_tables
from dml_core.tables.pages.index import write_index
from dml_core.tables.pages.mini import MiniPage, build_mini_page
from dml_core.tier import Tier
from dml_core.vocabulary import FAIR_KEY


@dataclass
class BuiltPages:
    """What ``build_pages`` wrote: each paper's page at the full or smoke tier, each mini page, the fair study's
    files, and the index (None at the mini tier)."""

    papers: dict[str, PaperTables] = field(default_factory=dict)
    mini: dict[str, MiniPage] = field(default_factory=dict)
    fair: list[Path] = field(default_factory=list)
    index: Path | None = None

    @property
    def refused(self) -> list[Refusal]:
        """The results files the gate refused, every paper's (in no table)."""
        return [refusal for tables in self.papers.values() for refusal in tables.refused]

    @property
    def long_forms(self) -> dict[str, Path]:
        """Each paper page's long form (``<key>.csv``), what ``gate.check`` reads."""
        return {key: tables.long_form for key, tables in self.papers.items()}


def build_pages(
    keys: Sequence[str],
    tier: Tier,
    *,
    results_root: Path,
    tables_root: Path,
    tolerances: Tolerances,
    recipes_dir: Path = RECIPES_DIR,
    papers_dir: Path | None = None,
    data_root: Path | None = None,
    draw_plots: bool = True,
    log: Callable[[str], None] = print,
    warn: Callable[[str], None] | None = None,
) -> BuiltPages:
    """Write the pages of ``keys`` (paper keys, or ``fair``) at ``tier`` from ``<results_root>/[tier/]<key>/``
    into ``tables_root``, then the index (not at the mini tier). ``log`` gets a line per file written, ``warn``
    (default: ``log``) each results file the gate refused and what it could not check. ``data_root``: the
    prepared datasets whose split index the deep runs must have used (None: not compared, and the notes say so);
    ``draw_plots``: the paper pages' figures."""
    warn = warn or log
    built = BuiltPages()
    for key in keys:
        if key == FAIR_KEY:
            built.fair = write_fair_tables(results_root, tables_root, tier, papers_dir, Path(recipes_dir))
            for path in built.fair:
                log(f"tables: {path}")
        elif tier == Tier.MINI:
            built.mini[key] = build_mini_page(key, results_root, tables_root, recipes_dir)
            log(f"tables: {built.mini[key].markdown_path}")
        else:
            tables = build_paper_tables(
                key,
                results_root=results_root,
                tables_root=tables_root,
                recipes_dir=recipes_dir,
                tolerances=tolerances,
                tier=tier,
                papers_dir=papers_dir,
                draw_plots=draw_plots,
                data_root=data_root,
            )
            built.papers[key] = tables
            log(f"tables: {tables.markdown_path}")
            for refusal in tables.refused:
                warn(f"results gate: REFUSED {refusal}")
            for note in tables.notes:
                warn(f"results gate: note: {note}")
    if tier != Tier.MINI:
        built.index = write_index(tables_root, tolerances, tier, papers_dir)
        log(f"tables: {built.index}")
    return built
