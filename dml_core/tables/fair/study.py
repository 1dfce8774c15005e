"""The fair comparison's runs, grouped and judged: every method under one protocol, against the best classic baseline.

The build (``build``) reads every results file of ``results/[mini/]fair/`` (the strict loader: a file that does not
load is an error naming it), groups them by method and dataset (recipe id ``<method>-<dataset>``) and by the readings
they ran under: the study's default readings make the table, the search points of the reading ``fair.search-point``
its validation search (``dml_core.tables.fair.search``), runs of any other reading are named and left out. Each run
contributes the test metrics of the evaluation its validation split picked (``best_val_r1`` or ``best_val_map_r``; a
run selected on the test classes is refused). Per dataset: R@1, MAP@R and NMI per method as mean ± sample std over
seeds; the best classic baseline by mean test R@1; each method's difference from it, paired where the two trained on
the same batches, Welch's otherwise (``batches``, ``verdicts``); the controls' same-batch comparisons; the
gain the method's paper printed over that baseline (``papers/fair/claims.yaml``). Every verdict of the page is
Holm-corrected together (``build``), which writes ``tables/[mini/]fair.md``, its CSV and one figure (``fair.png``).
"""

from __future__ import annotations

import statistics
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path

from dml_core.errors import InputError
from dml_core.output_paths import results_folder
from dml_core.published import PublishedPaper
from dml_core.results import ResultsFile, select
from dml_core.tables.fair.batches import results_batch_stream
from dml_core.tables.fair.claims import ClaimedGain, ClaimedPair, FairClaims
from dml_core.tables.fair.protocol import SEARCH_READING, protocol_lines
from dml_core.tables.fair.verdicts import Difference, paired_difference, welch_difference
from dml_core.tables.gate.join import load_results_folder, run_variant
from dml_core.tier import Tier
from dml_core.vocabulary import FAIR_CONTROLS, FAIR_DATASETS, FAIR_KEY, FAIR_METHODS, PAPER_KEYS

# The rules the fair protocol admits: the validation split picks the checkpoint, never the test classes; the other
# one of the two is shown beside it, from the same runs (the pick does not change training).
VALIDATION_RULES = {"best_val_r1": "R@1", "best_val_map_r": "MAP@R"}
METRICS = ("R@1", "MAP@R", "NMI")
VALIDATION_R1 = "validation R@1"
# Each control, the paper method it is the control of and the classic baseline whose loss it runs
# (reproduce/fair/controls.yaml): method - control is the method's term alone, control - baseline the batch makeup.
CONTROLS = {"multi-similarity-paired": ("cgml", "multi-similarity")}


@dataclass(frozen=True)
class FairRun:
    """One results file of the fair study: which method on which dataset, under which readings, from where."""

    method: str
    dataset: str  # the recipe's dataset (cub200, ...); the mini tier trains and tests its recipes on embedded_mini
    path: Path
    results: ResultsFile

    @property
    def variant(self) -> str:
        return run_variant(self.results)

    def pick(self, rule: str | None = None) -> dict:
        """The evaluation ``rule`` picks (the run's own rule when None), as a selection record."""
        if rule is None or rule == self.results.selection.rule:
            return self.results.selection.model_dump()
        recorded = (self.results.selections or {}).get(rule)
        if recorded is not None:
            return recorded.model_dump()
        return select([evaluation.model_dump() for evaluation in self.results.evaluations], rule)


@dataclass(frozen=True)
class MethodLine:
    """One method on one dataset over its seeds (no runs: not run)."""

    method: str
    dataset: str
    runs: tuple[FairRun, ...]

    @property
    def kind(self) -> str:
        if self.method in PAPER_KEYS:
            return "paper"
        return "control" if self.method in FAIR_CONTROLS else "baseline"

    @property
    def ran(self) -> bool:
        return bool(self.runs)

    @property
    def seeds(self) -> list[int]:
        return [run.results.seed for run in self.runs]

    def values(self, metric: str, rule: str | None = None) -> list[float]:
        """The picked evaluation's test ``metric`` of each seed that reported it (``VALIDATION_R1``: its validation
        R@1); picked by each run's own rule, or by ``rule``."""
        picks = [run.pick(rule) for run in self.runs]
        if metric == VALIDATION_R1:
            found = [pick.get("validation_metrics") or {} for pick in picks]
            return [metrics["R@1"] for metrics in found if "R@1" in metrics]
        return [pick["metrics"][metric] for pick in picks if metric in pick["metrics"]]

    def by_seed(self, metric: str, rule: str | None = None) -> dict[int, float]:
        """``{seed: test metric}`` of the picked evaluations (a paired comparison matches them by seed)."""
        picks = {run.results.seed: run.pick(rule)["metrics"] for run in self.runs}
        return {seed: metrics[metric] for seed, metrics in picks.items() if metric in metrics}

    def mean(self, metric: str, rule: str | None = None) -> float:
        return statistics.fmean(self.values(metric, rule))


def same_batches(ours: MethodLine, reference: MethodLine) -> bool:
    """Whether the two lines trained on the same batches at every seed both ran (``batches``)."""
    runs = {run.results.seed: run for run in reference.runs}
    common = [run for run in ours.runs if run.results.seed in runs]
    return bool(common) and all(
        results_batch_stream(run.results) == results_batch_stream(runs[run.results.seed].results) for run in common
    )


def compare(ours: MethodLine, reference: MethodLine, metric: str = "R@1", rule: str | None = None) -> Difference:
    """``ours`` minus ``reference`` in test ``metric``: paired over the common seeds where they trained on the same
    batches, Welch's otherwise."""
    if same_batches(ours, reference):
        return paired_difference(ours.by_seed(metric, rule), reference.by_seed(metric, rule))
    return welch_difference(ours.values(metric, rule), reference.values(metric, rule))


@dataclass(frozen=True)
class ClaimCell:
    """What the method's paper printed over the best baseline (or a stand-in), or why nothing is shown."""

    gain: ClaimedGain | None
    entry: ClaimedPair | None
    paper: str


@dataclass(frozen=True)
class ControlComparison:
    """A comparison of two lines that trained on batches of one makeup, or of the same loss on two makeups."""

    ours: MethodLine
    reference: MethodLine
    differs_by: str  # what alone differs between the two
    difference: Difference


@dataclass
class DatasetSection:
    """One dataset's comparison."""

    dataset: str
    lines: list[MethodLine]
    best: MethodLine | None  # the classic baseline with the best mean test R@1 (None: no baseline ran)
    differences: dict[str, Difference] = field(default_factory=dict)  # method -> its R@1 minus the best's
    controls: list[ControlComparison] = field(default_factory=list)
    claims: dict[str, ClaimCell] = field(default_factory=dict)  # paper method -> its paper's claimed gain
    protocol: str = ""
    protocol_differences: list[str] = field(default_factory=list)

    @property
    def ran(self) -> list[MethodLine]:
        return [line for line in self.lines if line.ran]

    @property
    def results_datasets(self) -> list[str]:
        return sorted({run.results.dataset for line in self.lines for run in line.runs})

    def line(self, method: str) -> MethodLine:
        return next(line for line in self.lines if line.method == method)


@dataclass(frozen=True)
class FairTables:
    """What ``build_fair_tables`` found, and the tier."""

    tier: Tier
    sections: list[DatasetSection]
    source: Path  # the results folder read
    files: int
    rule: str  # the selection rule of the table's runs
    searches: list = field(default_factory=list)  # ``search.SearchSection`` per dataset with search runs
    left_out: dict[str, int] = field(default_factory=dict)  # variant of other readings -> its results files

    @property
    def other_rule(self) -> str:
        """The other validation rule, shown beside the table's from the same runs."""
        return next(rule for rule in VALIDATION_RULES if rule != self.rule)

    def all_differences(self) -> list[Difference]:
        """Every verdict of the page, in a fixed order (the family Holm's correction runs over)."""
        found = []
        for section in [*self.sections, *(search.section for search in self.searches)]:
            found += [*section.differences.values(), *(control.difference for control in section.controls)]
        return found


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


def is_search_variant(variant: str) -> bool:
    """A run at a search point of ``fair.search-point`` under the study's other default readings.

    >>> is_search_variant("fair.search-point=lower"), is_search_variant("fair.search-point=lower~precision=bf16")
    (True, False)
    """
    return variant.startswith(f"{SEARCH_READING}=") and "~" not in variant


def load_fair_runs(results_root: Path, tier: Tier) -> tuple[list[FairRun], Path]:
    """Every results file of the study at ``tier``, checked: a deep run of this tier; one of the table's (default
    readings or a search point) selected on the validation split."""
    folder = results_folder(results_root, FAIR_KEY, tier)
    runs = []
    for item in load_results_folder(folder, tier) if folder.is_dir() else []:
        results = item.results
        if not isinstance(results, ResultsFile):
            raise InputError(f"{item.path}: field kind: expected a deep results file, found {results.kind!r}")
        if results.tier != tier:
            found = results.tier.value
            raise InputError(f"{item.path}: field tier: expected {tier.value!r} in {folder}, found {found!r}")
        method, dataset = method_and_dataset(results.recipe.id, item.path)
        run = FairRun(method, dataset, item.path, results)
        if (run.variant == "" or is_search_variant(run.variant)) and results.selection.rule not in VALIDATION_RULES:
            raise InputError(
                f"{item.path}: field selection.rule: expected {' or '.join(map(repr, VALIDATION_RULES))} (the fair "
                f"protocol selects the checkpoint on the validation split, never on the test classes), found "
                f"{results.selection.rule!r}"
            )
        runs.append(run)
    return runs, folder


def table_rule(runs: Sequence[FairRun], folder: Path) -> str:
    """The selection rule of the table's runs (the default readings'): one for all of them."""
    rules = sorted({run.results.selection.rule for run in runs if run.variant == ""})
    if len(rules) > 1:
        raise InputError(f"{folder}: field selection.rule: expected one rule for the study's runs, found {rules}")
    return rules[0] if rules else "best_val_r1"


def best_baseline(lines: Sequence[MethodLine]) -> MethodLine | None:
    """The classic baseline with the highest mean test R@1 (the first in the study's order on a tie)."""
    candidates = [line for line in lines if line.kind == "baseline" and line.values("R@1")]
    return max(candidates, key=lambda line: line.mean("R@1"), default=None)


def control_comparisons(lines: Sequence[MethodLine]) -> list[ControlComparison]:
    """Each control that ran against its paper method (the method's term alone) and its classic baseline (the batch
    makeup alone)."""
    found = []
    by_method = {line.method: line for line in lines}
    for control, (method, baseline) in CONTROLS.items():
        line = by_method.get(control)
        if line is None or not line.values("R@1"):
            continue
        for ours, reference, differs_by in (
            (by_method[method], line, f"{method}'s own term (the same batches)"),
            (line, by_method[baseline], f"the batch makeup ({control}'s batches against {baseline}'s)"),
        ):
            if ours.values("R@1") and reference.values("R@1"):
                found.append(ControlComparison(ours, reference, differs_by, compare(ours, reference)))
    return found


def judged_section(dataset: str, lines: list[MethodLine]) -> DatasetSection:
    """``lines`` with their best baseline and each other line's difference from it (the controls: none)."""
    section = DatasetSection(dataset, lines, best_baseline(lines))
    for line in lines:
        if section.best is not None and line is not section.best and line.kind != "control" and line.values("R@1"):
            section.differences[line.method] = compare(line, section.best)
    return section


def dataset_section(
    dataset: str, runs: Sequence[FairRun], claims: FairClaims, papers: dict[str, PublishedPaper]
) -> DatasetSection:
    """One dataset's lines (every method of the study, in its order), best baseline, differences, the controls'
    comparisons and the papers' claims."""
    by_seed = sorted(runs, key=lambda run: run.results.seed)
    lines = [MethodLine(method, dataset, tuple(r for r in by_seed if r.method == method)) for method in FAIR_METHODS]
    section = judged_section(dataset, lines)
    section.controls = control_comparisons(lines)
    shared, differing = protocol_lines([(run.method, run.results) for line in lines for run in line.runs])
    section.protocol, section.protocol_differences = shared, differing
    if section.best is None:
        return section
    ranking = sorted((line for line in lines if line.kind == "baseline" and line.values("R@1")),
                     key=lambda line: -line.mean("R@1"))  # fmt: skip
    for line in lines:
        if line.kind == "paper":
            entry = claims.entry(line.method, dataset)
            gain = entry.gain(section.best.method, [b.method for b in ranking], papers[line.method]) if entry else None
            section.claims[line.method] = ClaimCell(gain, entry, line.method)
    return section
