"""The fair comparison's table (issue 37): every method under one protocol, against the best classic baseline.

``write_fair_tables`` reads every results file of ``results/[mini/]fair/`` (the strict loader: a file that does not
load is an error naming it), groups them by method and dataset (recipe id ``<method>-<dataset>``), and takes each
run's test metrics of the evaluation its validation R@1 picked (the ``best_val_r1`` selection; a fair results file
selected by any other rule is refused). Per dataset: R@1, MAP@R and NMI per method as mean ± sample std over seeds,
the best classic baseline by mean test R@1, each method's difference from it with a 95% Welch interval over seeds
and its verdict (``dml_core.tables.fair_verdicts``), and beside it the gain the method's paper printed over that
baseline (``papers/fair/claims.yaml``, ``dml_core.tables.fair_claims``). It writes ``tables/[mini/]fair.md``, the
CSV beside it and one figure (``fair.png``).
"""

from __future__ import annotations

import statistics
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path

from dml_core.atomic_io import atomic_write_text
from dml_core.errors import InputError
from dml_core.output_paths import results_folder, tables_markdown
from dml_core.published import PublishedPaper, load_published
from dml_core.results import ResultsFile
from dml_core.tables.fair_claims import ClaimedGain, ClaimedPair, FairClaims, load_fair_claims
from dml_core.tables.fair_protocol import protocol_lines
from dml_core.tables.fair_verdicts import Difference, welch_difference
from dml_core.tables.join import load_results_folder
from dml_core.tier import Tier
from dml_core.vocabulary import FAIR_DATASETS, FAIR_KEY, FAIR_METHODS, PAPER_KEYS

SELECTION_RULE = "best_val_r1"  # the only rule the fair protocol admits: the test classes never pick a checkpoint
METRICS = ("R@1", "MAP@R", "NMI")
VALIDATION_R1 = "validation R@1"


@dataclass(frozen=True)
class FairRun:
    """One results file of the fair study: which method on which dataset, and where it was read from."""

    method: str
    dataset: str  # the recipe's dataset (cub200, ...); the mini tier trains and tests its recipes on embedded_mini
    path: Path
    results: ResultsFile


@dataclass(frozen=True)
class MethodLine:
    """One method on one dataset over its seeds (no runs: not run)."""

    method: str
    dataset: str
    runs: tuple[FairRun, ...]

    @property
    def kind(self) -> str:
        return "paper" if self.method in PAPER_KEYS else "baseline"

    @property
    def ran(self) -> bool:
        return bool(self.runs)

    @property
    def seeds(self) -> list[int]:
        return [run.results.seed for run in self.runs]

    def values(self, metric: str) -> list[float]:
        """The selected evaluation's test ``metric`` of each seed that reported it (``VALIDATION_R1``: its
        validation R@1)."""
        if metric == VALIDATION_R1:
            found = [run.results.selection.validation_metrics or {} for run in self.runs]
            return [metrics["R@1"] for metrics in found if "R@1" in metrics]
        return [run.results.selection.metrics[metric] for run in self.runs if metric in run.results.selection.metrics]

    def mean(self, metric: str) -> float:
        return statistics.fmean(self.values(metric))


@dataclass(frozen=True)
class ClaimCell:
    """What the method's paper printed over the best baseline (or a stand-in), or why nothing is shown."""

    gain: ClaimedGain | None
    entry: ClaimedPair | None
    paper: str


@dataclass
class DatasetSection:
    """One dataset's comparison."""

    dataset: str
    lines: list[MethodLine]
    best: MethodLine | None  # the classic baseline with the best mean test R@1 (None: no baseline ran)
    differences: dict[str, Difference] = field(default_factory=dict)  # method -> its R@1 minus the best's
    claims: dict[str, ClaimCell] = field(default_factory=dict)  # paper method -> its paper's claimed gain
    protocol: str = ""
    protocol_differences: list[str] = field(default_factory=list)

    @property
    def ran(self) -> list[MethodLine]:
        return [line for line in self.lines if line.ran]

    @property
    def results_datasets(self) -> list[str]:
        return sorted({run.results.dataset for line in self.lines for run in line.runs})


@dataclass(frozen=True)
class FairTables:
    """What ``build_fair_tables`` found, and the tier."""

    tier: Tier
    sections: list[DatasetSection]
    source: Path  # the results folder read
    files: int


def method_and_dataset(recipe_id: str, origin: Path) -> tuple[str, str]:
    """``multi-similarity-cub200`` -> ``("multi-similarity", "cub200")``; an id outside the study is an error.

    >>> method_and_dataset("triplet-semihard-cars196", Path("x.json"))
    ('triplet-semihard', 'cars196')
    """
    for dataset in FAIR_DATASETS:
        method = recipe_id.removesuffix(f"-{dataset}")
        if method != recipe_id and method in FAIR_METHODS:
            return method, dataset
    raise InputError(
        f"{origin}: field recipe.id: expected <method>-<dataset> with method one of {', '.join(FAIR_METHODS)} and "
        f"dataset one of {', '.join(FAIR_DATASETS)}, found {recipe_id!r}"
    )


def load_fair_runs(results_root: Path, tier: Tier) -> tuple[list[FairRun], Path]:
    """Every results file of the study at ``tier``, checked: a deep run of this tier, selected by validation R@1."""
    folder = results_folder(results_root, FAIR_KEY, tier)
    runs = []
    for item in load_results_folder(folder, tier) if folder.is_dir() else []:
        results = item.results
        if not isinstance(results, ResultsFile):
            raise InputError(f"{item.path}: field kind: expected a deep results file, found {results.kind!r}")
        if results.tier != tier:
            raise InputError(f"{item.path}: field tier: expected {tier.value!r} in {folder}, found {results.tier!r}")
        if results.selection.rule != SELECTION_RULE:
            raise InputError(
                f"{item.path}: field selection.rule: expected {SELECTION_RULE!r} (the fair protocol selects the "
                f"checkpoint on the validation split, never on the test classes), found {results.selection.rule!r}"
            )
        method, dataset = method_and_dataset(results.recipe.id, item.path)
        runs.append(FairRun(method, dataset, item.path, results))
    return runs, folder


def best_baseline(lines: Sequence[MethodLine]) -> MethodLine | None:
    """The classic baseline with the highest mean test R@1 (the first in the study's order on a tie)."""
    candidates = [line for line in lines if line.kind == "baseline" and line.values("R@1")]
    return max(candidates, key=lambda line: line.mean("R@1"), default=None)


def dataset_section(dataset: str, runs: Sequence[FairRun], claims: FairClaims, papers: dict[str, PublishedPaper]):
    """One dataset's lines (every method of the study, in its order), best baseline, differences and claims."""
    by_seed = sorted(runs, key=lambda run: run.results.seed)
    lines = [MethodLine(method, dataset, tuple(r for r in by_seed if r.method == method)) for method in FAIR_METHODS]
    section = DatasetSection(dataset, lines, best_baseline(lines))
    shared, differing = protocol_lines([(run.method, run.results) for line in lines for run in line.runs])
    section.protocol, section.protocol_differences = shared, differing
    if section.best is None:
        return section
    ranking = sorted((line for line in lines if line.kind == "baseline" and line.values("R@1")),
                     key=lambda line: -line.mean("R@1"))  # fmt: skip
    for line in lines:
        if line is not section.best and line.values("R@1"):
            section.differences[line.method] = welch_difference(line.values("R@1"), section.best.values("R@1"))
        if line.kind == "paper":
            entry = claims.entry(line.method, dataset)
            gain = entry.gain(section.best.method, [b.method for b in ranking], papers[line.method]) if entry else None
            section.claims[line.method] = ClaimCell(gain, entry, line.method)
    return section


def build_fair_tables(
    results_root: Path, tier: Tier, papers_dir: Path | None = None, datasets: Sequence[str] = FAIR_DATASETS
) -> FairTables:
    """The study's sections, one per dataset, from ``<results_root>/[mini/]fair/``."""
    runs, folder = load_fair_runs(results_root, tier)
    claims = load_fair_claims(papers_dir)
    papers = {key: load_published(key, papers_dir) for key in PAPER_KEYS}
    sections = [dataset_section(d, [r for r in runs if r.dataset == d], claims, papers) for d in datasets]
    return FairTables(tier, sections, folder, len(runs))


def write_fair_tables(results_root: Path, tables_root: Path, tier: Tier, papers_dir: Path | None = None) -> list[Path]:
    """Write ``<tables_root>/[mini/]fair.md``, ``fair.csv`` and ``fair.png`` beside it; return the files written
    (no figure when no method ran)."""
    from dml_core.tables.fair_figure import fair_figure  # matplotlib only where a page is written
    from dml_core.tables.fair_page import fair_csv, fair_markdown

    tables = build_fair_tables(Path(results_root), tier, papers_dir)
    path = tables_markdown(Path(tables_root), FAIR_KEY, tier)
    figure = fair_figure(tables, path.with_suffix(".png"))
    written = [atomic_write_text(path, fair_markdown(tables, figure)), fair_csv(tables, path.with_suffix(".csv"))]
    if figure is None:
        path.with_suffix(".png").unlink(missing_ok=True)  # a figure of an earlier build no longer drawn
    return written + ([figure] if figure is not None else [])
