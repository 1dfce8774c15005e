"""The fair comparison's runs, grouped and compared: every method under one protocol, against a reference picked on
validation, in the family of hypotheses the study declared before its runs (``reproduce/fair/study.yaml``).

The build (``build``) reads every results file of ``results/[mini/]fair/`` (the strict loader: a file that does not
load is an error naming it), groups them by method and dataset (recipe id ``<method>-<dataset>``) and by the readings
they ran under: the study's default readings make the table, the search points of the reading ``fair.search-point``
its validation search (``dml_core.tables.fair.search``), runs of any other reading are named and left out. Each run
contributes the test metrics of the evaluation its validation split picked (``best_val_r1`` or ``best_val_map_r``; a
run selected on the test classes is refused); a run whose pick is its untrained evaluation (training failed to beat
its random start on validation) is flagged and enters no comparison. Per dataset: R@1, MAP@R and NMI per method as
mean ± sample std over seeds; the reference, the classic baseline with the best mean validation metric; each paper
method's difference from it per declared metric (a hypothesis of the family where the study declared it, exploratory
otherwise), paired where the two trained on the same batches under the same code, Welch's otherwise (``batches``,
``verdicts``); the baselines against the reference, the controls' same-batch comparisons and each paper method against
the baselines its paper printed (``papers/fair/claims.yaml``), all exploratory. At the mini tier a page compares only
where the reference clears the tier's learning bar.
"""

from __future__ import annotations

import statistics
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path

from dml_core.errors import InputError
from dml_core.output_paths import results_folder
from dml_core.published import PublishedPaper
from dml_core.recipes.study import SEARCH_READING, Study, StudyMethods
from dml_core.results import ResultsFile, select
from dml_core.tables.fair.batches import why_not_shared
from dml_core.tables.fair.claims import ClaimedGain, ClaimedPair, FairClaims
from dml_core.tables.fair.protocol import protocol_lines
from dml_core.tables.fair.verdicts import PAIRED, Difference, Verdict, paired_difference, welch_difference
from dml_core.tables.gate.join import load_results_folder, run_variant
from dml_core.tables.pages.mini import LEARNING_GAIN
from dml_core.tier import Tier
from dml_core.vocabulary import FAIR_DATASETS, FAIR_KEY

# The rules the fair protocol admits: the validation split picks the checkpoint, never the test classes; the other
# one of the two is shown beside it, from the same runs (the pick does not change training).
VALIDATION_RULES = {"best_val_r1": "R@1", "best_val_map_r": "MAP@R"}
METRICS = ("R@1", "MAP@R", "NMI")
VALIDATION_R1 = "validation R@1"
HYPOTHESIS, EXPLORATORY = "hypothesis", "exploratory"


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

    @property
    def picked_untrained(self) -> bool:
        """Its own rule picked the evaluation before the first update: training did not beat the random start on
        validation, so the run compares nothing."""
        untrained = self.results.untrained
        return untrained is not None and self.pick()["iteration"] == untrained.iteration


@dataclass(frozen=True)
class MethodLine:
    """One method on one dataset over its seeds (no runs: not run); ``kind``: the study's word for the method
    (``paper``, ``baseline`` or ``control``: ``StudyMethods.kind``)."""

    method: str
    dataset: str
    runs: tuple[FairRun, ...]
    kind: str

    @property
    def ran(self) -> bool:
        return bool(self.runs)

    @property
    def seeds(self) -> list[int]:
        return [run.results.seed for run in self.runs]

    @property
    def trained(self) -> tuple[FairRun, ...]:
        """The runs that enter a comparison: those whose pick is not their untrained evaluation."""
        return tuple(run for run in self.runs if not run.picked_untrained)

    @property
    def untrained_picks(self) -> list[int]:
        """The seeds whose pick is their untrained evaluation (flagged, out of every comparison)."""
        return [run.results.seed for run in self.runs if run.picked_untrained]

    def values(self, metric: str, rule: str | None = None) -> list[float]:
        """The picked evaluation's test ``metric`` of each seed that reported it (``VALIDATION_R1``: its validation
        R@1); picked by each run's own rule, or by ``rule``."""
        if metric == VALIDATION_R1:
            return self.validation_values("R@1", rule)
        picks = [run.pick(rule) for run in self.runs]
        return [pick["metrics"][metric] for pick in picks if metric in pick["metrics"]]

    def validation_values(self, metric: str, rule: str | None = None) -> list[float]:
        """The picked evaluation's validation ``metric`` of each seed that reported it."""
        found = [run.pick(rule).get("validation_metrics") or {} for run in self.runs]
        return [metrics[metric] for metrics in found if metric in metrics]

    def by_seed(self, metric: str, runs: Sequence[FairRun] | None = None) -> dict[int, float]:
        """``{seed: test metric}`` of the picked evaluations of ``runs`` (default: every run)."""
        picks = {run.results.seed: run.pick()["metrics"] for run in (self.runs if runs is None else runs)}
        return {seed: metrics[metric] for seed, metrics in picks.items() if metric in metrics}

    def mean(self, metric: str, rule: str | None = None) -> float:
        return statistics.fmean(self.values(metric, rule))

    def learning_gain(self) -> float | None:
        """Mean picked test R@1 minus mean untrained test R@1 over the runs, in points (None: a run made no
        untrained evaluation, or no run has R@1)."""
        untrained = [run.results.untrained for run in self.runs]
        if not self.runs or any(record is None or "R@1" not in record.metrics for record in untrained):
            return None
        picked = self.values("R@1")
        if len(picked) != len(self.runs):
            return None
        return statistics.fmean(picked) - statistics.fmean(record.metrics["R@1"] for record in untrained if record)


@dataclass(frozen=True)
class Comparison:
    """``ours`` minus ``reference`` in test ``metric``, over the runs of each that trained: a hypothesis of the
    declared family or exploratory (``kind``). ``difference`` None: a side has no trained run (``why``)."""

    ours: MethodLine
    reference: MethodLine
    metric: str
    kind: str  # HYPOTHESIS or EXPLORATORY
    difference: Difference | None
    why: str = ""  # why no difference was measured, where none was
    shared: str = ""  # why the runs are not shown to share batches and code ("" where they do: paired)
    differs_by: str = ""  # a control comparison: what alone differs between the two
    verdict: Verdict | None = None  # set by the build: in its family (a hypothesis) or alone (exploratory)

    @property
    def seeds(self) -> tuple[list[int], list[int]]:
        """The seeds the difference is over, ours and the reference's: the common trained seeds (both alike) when
        paired, each side's trained seeds otherwise."""
        ours, theirs = [r.results.seed for r in self.ours.trained], [r.results.seed for r in self.reference.trained]
        if self.difference is not None and self.difference.test == PAIRED:
            common = sorted(set(ours) & set(theirs))
            return common, common
        return ours, theirs

    @property
    def left_out(self) -> dict[str, list[int]]:
        """Per side, the seeds out of the comparison because their pick is their untrained evaluation."""
        sides = {self.ours.method: self.ours.untrained_picks, self.reference.method: self.reference.untrained_picks}
        return {method: seeds for method, seeds in sides.items() if seeds}


def compare(ours: MethodLine, reference: MethodLine, metric: str, kind: str, differs_by: str = "") -> Comparison:
    """``ours`` minus ``reference`` in test ``metric`` over their trained runs: paired over the common seeds where
    every common seed's two runs shared batches and code, Welch's otherwise."""
    mine, theirs = ours.trained, reference.trained
    if not mine or not theirs:
        without = [line.method for line, runs in ((ours, mine), (reference, theirs)) if not runs]
        return Comparison(ours, reference, metric, kind, None, f"no trained run of {' or '.join(without)}",
                          differs_by=differs_by)  # fmt: skip
    by_seed = {run.results.seed: run for run in theirs}
    common = [(run, by_seed[run.results.seed]) for run in mine if run.results.seed in by_seed]
    reasons = [why_not_shared(a.results, b.results) for a, b in common] or ["no common seed"]
    shared = next((reason for reason in reasons if reason), "")
    if not shared:
        difference = paired_difference(ours.by_seed(metric, mine), reference.by_seed(metric, theirs))
    else:
        difference = welch_difference(list(ours.by_seed(metric, mine).values()),
                                      list(reference.by_seed(metric, theirs).values()))  # fmt: skip
    return Comparison(ours, reference, metric, kind, difference, shared=shared, differs_by=differs_by)


@dataclass(frozen=True)
class PrintedGain:
    """A paper method's gain over a classic baseline as its paper printed it, beside this study's difference from
    that same baseline (``comparison``, exploratory)."""

    gain: ClaimedGain
    comparison: Comparison


@dataclass(frozen=True)
class LearningCheck:
    """Whether a mini-tier page may compare: the reference's mean gain in test R@1 over its untrained evaluation
    against the tier's learning bar (``dml_core.tables.pages.mini.LEARNING_GAIN``)."""

    reference: str
    gain: float | None  # None: not measurable (a run without an untrained evaluation)
    bar: float = LEARNING_GAIN

    @property
    def clears(self) -> bool:
        return self.gain is not None and self.gain >= self.bar


@dataclass
class DatasetSection:
    """One dataset's comparison."""

    dataset: str
    lines: list[MethodLine]
    reference: MethodLine | None  # the classic baseline with the best mean validation metric (None: none ran)
    hypotheses: list[Comparison] = field(default_factory=list)  # each paper method against the reference
    exploratory: list[Comparison] = field(default_factory=list)  # each other baseline against the reference
    controls: list[Comparison] = field(default_factory=list)
    printed: list[PrintedGain] = field(default_factory=list)
    claims: dict[str, ClaimedPair] = field(default_factory=dict)  # paper method -> its claims entry
    protocol: str = ""
    protocol_differences: list[str] = field(default_factory=list)
    learning: LearningCheck | None = None  # the mini tier's: may the page compare at all?

    @property
    def ran(self) -> list[MethodLine]:
        return [line for line in self.lines if line.ran]

    @property
    def compares(self) -> bool:
        """Whether verdict words may be printed: always at full scale, at the mini tier only where the reference
        learns."""
        return self.learning is None or self.learning.clears

    @property
    def results_datasets(self) -> list[str]:
        return sorted({run.results.dataset for line in self.lines for run in line.runs})

    def line(self, method: str) -> MethodLine:
        return next(line for line in self.lines if line.method == method)

    def comparisons(self) -> list[Comparison]:
        """Every comparison of the section, hypotheses first."""
        printed = [gain.comparison for gain in self.printed]
        return [*self.hypotheses, *self.exploratory, *self.controls, *printed]


@dataclass(frozen=True)
class FairTables:
    """What ``build_fair_tables`` found, the tier and the study's declared design."""

    tier: Tier
    study: Study
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

    @property
    def family_size(self) -> int:
        """The hypotheses the study declared for this tier: Holm's correction runs over them, run or not."""
        return len(self.study.family(self.tier))


def method_and_dataset(recipe_id: str, methods: Sequence[str], origin: Path) -> tuple[str, str]:
    """``multi-similarity-cub200`` -> ``("multi-similarity", "cub200")``; an id outside the study's ``methods`` and
    data sets is an error.

    >>> method_and_dataset("triplet-semihard-cars196", ["npair", "triplet-semihard"], Path("x.json"))
    ('triplet-semihard', 'cars196')
    """
    for dataset in FAIR_DATASETS:
        method = recipe_id.removesuffix(f"-{dataset}")
        if method != recipe_id and method in methods:
            return method, dataset
    raise InputError(
        f"{origin}: field recipe.id: expected <method>-<dataset> with method one of {', '.join(methods)} and "
        f"dataset one of {', '.join(FAIR_DATASETS)}, found {recipe_id!r}"
    )


def is_search_variant(variant: str) -> bool:
    """A run at a search point of ``fair.search-point`` under the study's other default readings.

    >>> is_search_variant("fair.search-point=lr-x2"), is_search_variant("fair.search-point=lr-x2~precision=bf16")
    (True, False)
    """
    return variant.startswith(f"{SEARCH_READING}=") and "~" not in variant


def load_fair_runs(results_root: Path, tier: Tier, methods: StudyMethods) -> tuple[list[FairRun], Path]:
    """Every results file of the study at ``tier``, checked: a deep run of this tier, of one of the study's
    ``methods``; one of the table's (default readings or a search point) selected on the validation split."""
    folder = results_folder(results_root, FAIR_KEY, tier)
    runs = []
    for item in load_results_folder(folder, tier) if folder.is_dir() else []:
        results = item.results
        if not isinstance(results, ResultsFile):
            raise InputError(f"{item.path}: field kind: expected a deep results file, found {results.kind!r}")
        if results.tier != tier:
            found = results.tier.value
            raise InputError(f"{item.path}: field tier: expected {tier.value!r} in {folder}, found {found!r}")
        method, dataset = method_and_dataset(results.recipe.id, methods.names, item.path)
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


def reference_baseline(lines: Sequence[MethodLine], rule: str) -> MethodLine | None:
    """The classic baseline with the highest mean validation metric that ``rule`` selects on (validation R@1 under
    best_val_r1), over every seed's pick; the first in the study's order on a tie. Picked on validation, never on
    the test numbers it is then compared with."""
    metric = VALIDATION_RULES[rule]
    candidates = [line for line in lines if line.kind == "baseline" and line.validation_values(metric)]
    return max(candidates, key=lambda line: statistics.fmean(line.validation_values(metric)), default=None)


def control_comparisons(lines: Sequence[MethodLine], methods: StudyMethods) -> list[Comparison]:
    """Each control that ran against its paper method (the method's term alone) and its classic baseline (the batch
    makeup alone), in test R@1: exploratory."""
    found = []
    by_method = {line.method: line for line in lines}
    for control, declared in methods.controls.items():
        method, baseline = declared.method, declared.baseline
        line = by_method.get(control)
        if line is None or not line.ran:
            continue
        for ours, reference, differs_by in (
            (by_method[method], line, f"{method}'s own term (the same batches)"),
            (line, by_method[baseline], f"the batch makeup ({control}'s batches against {baseline}'s)"),
        ):
            if ours.ran and reference.ran:
                found.append(compare(ours, reference, "R@1", EXPLORATORY, differs_by))
    return found


def judged_section(
    dataset: str, lines: list[MethodLine], rule: str, study: Study, tier: Tier, search: bool = False
) -> DatasetSection:
    """``lines`` with their reference, each paper method's difference from it per declared metric (a hypothesis
    where the study's family holds it, exploratory otherwise, and always exploratory in a ``search``), and each
    other baseline's (exploratory); at the mini tier, whether the reference learns."""
    section = DatasetSection(dataset, lines, reference_baseline(lines, rule))
    reference = section.reference
    if reference is None:
        return section
    family = set(study.family(tier))
    for line in lines:
        if line is reference or line.kind == "control" or not line.ran:
            continue
        for metric in study.hypotheses.metrics:
            declared = line.kind == "paper" and (line.method, dataset, metric) in family and not search
            comparison = compare(line, reference, metric, HYPOTHESIS if declared else EXPLORATORY)
            (section.hypotheses if declared else section.exploratory).append(comparison)
    if tier == Tier.MINI:
        section.learning = LearningCheck(reference.method, reference.learning_gain())
    return section


def printed_gains(section: DatasetSection, claims: FairClaims, papers: dict[str, PublishedPaper]) -> None:
    """Each paper method's printed gain over every classic baseline its paper printed that ran here, beside this
    study's difference from that same baseline (R@1, exploratory)."""
    for line in section.lines:
        entry = claims.entry(line.method, section.dataset) if line.kind == "paper" else None
        if entry is None:
            continue
        section.claims[line.method] = entry
        if not line.ran:
            continue
        for baseline in entry.baselines:
            reference = section.line(baseline)
            gain = entry.gain_over(baseline, papers[line.method])
            if reference.ran and gain is not None:
                section.printed.append(PrintedGain(gain, compare(line, reference, gain.metric, EXPLORATORY)))


def dataset_section(
    dataset: str,
    runs: Sequence[FairRun],
    rule: str,
    study: Study,
    tier: Tier,
    claims: FairClaims,
    papers: dict[str, PublishedPaper],
) -> DatasetSection:
    """One dataset's lines (every method of the study, in its order), reference, comparisons, the controls' and
    the printed gains beside this study's."""
    by_seed = sorted(runs, key=lambda run: run.results.seed)
    lines = [
        MethodLine(method, dataset, tuple(r for r in by_seed if r.method == method), study.methods.kind(method))
        for method in study.methods.names
    ]
    section = judged_section(dataset, lines, rule, study, tier)
    section.controls = control_comparisons(lines, study.methods)
    shared, differing = protocol_lines([(run.method, run.results) for line in lines for run in line.runs])
    section.protocol, section.protocol_differences = shared, differing
    printed_gains(section, claims, papers)
    return section
