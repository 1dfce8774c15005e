"""The paper runner behind ``dml reproduce KEY`` and the ``reproduce-<key>`` nox sessions: every run of a paper,
trained in this process.

For one paper: expand its runs under the chosen readings and tier, check their inputs before anything trains, print
the plan, train every run x seed (resumable: finished runs are skipped, interrupted ones continue), run its linear
plans, then build its tables. The tiers, rehearsals and studies it takes are in docs/tiers.md and docs/commands.md.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Mapping, Sequence
from contextlib import closing
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import TYPE_CHECKING, Any, NamedTuple

import torch

from dml_core.cpu_cores import available_cores
from dml_core.errors import InputError, NonFiniteError
from dml_core.output_paths import data_root as resolve_data_root
from dml_core.output_paths import rehearsal_root
from dml_core.readable import readable_duration
from dml_core.recipes.catalog import load_paper
from dml_core.recipes.mini import load_mini_comparison, mini_file, mini_runs
from dml_core.recipes.study import is_study, load_study, study_plan
from dml_core.runner import preflight as checks
from dml_core.runner.eta import RunClock, counted, side_by_side_eta
from dml_core.runner.fetch import fetch_missing_inputs
from dml_core.runner.linear import LinearRun, plan_linear_runs, reproduce_linear
from dml_core.runner.plan import MINI_SEEDS, is_finished, paper_runs, plan_runs, selected_linear_runs
from dml_core.runner.plan_report import PlanSetting, plan_lines, with_timings
from dml_core.runner.run_options import RunOptions
from dml_core.runner.run_path import RunPath
from dml_core.runner.side_by_side import run_side_by_side
from dml_core.tables.gate.tolerances import Tolerances, load_tolerances
from dml_core.tier import Tier
from dml_core.training.device_choice import check_run_device, chosen_device, describe_device
from dml_core.training.distributed import Process
from dml_core.training.run_description import PlannedRun

if TYPE_CHECKING:  # the page builder (pandas, matplotlib, scikit-learn) loads where pages are built, not in a run
    from dml_core.tables.builder.pages import BuiltPages


@dataclass
class ReproduceReport:
    """What a paper run did: runs trained, skipped as finished, failed (with the reason), and the tables."""

    trained: list[str] = field(default_factory=list)
    skipped: list[str] = field(default_factory=list)
    failed: dict[str, str] = field(default_factory=dict)
    tables: BuiltPages | None = None  # None: not built (jobs not ended yet, or ``reproduce(build_tables=False)``)
    not_run: dict[str, str] = field(default_factory=dict)  # run -> its missing inputs (``skip_missing``)


class Preflight(NamedTuple):
    """What the preflight lets train: the runs whose inputs are here (all of them, or it refuses, unless
    ``skip_missing``), the tolerances, and the runs left out with their missing inputs."""

    plans: list[PlannedRun]
    linear_runs: list[LinearRun]
    tolerances: Tolerances
    not_run: dict[str, str]


@dataclass(frozen=True)
class PaperRun(RunOptions, RunPath):
    """One paper's reproduction: which runs (``tier``, ``seeds``, ``only``), where it reads and writes, and how it
    trains (``RunOptions``, shared with ``dml nightly``): the options of ``dml reproduce``, whichever runner (this
    process: ``reproduce``; jobs: ``dml_core.runner.jobs.launch_paper``) trains the runs. Its runs are checked and
    trained on the path of every run (``RunPath``)."""

    key: str
    # mini: the headline comparison of reproduce/<key>/mini.yaml, mini versions, no linear plans
    tier: Tier = Tier.FULL
    seeds: Sequence[int] | None = None
    only: Sequence[str] = ()
    readings: Mapping[str, str] = field(default_factory=dict)  # reading -> value (``--reading``); others: defaults
    rerun: bool = False  # train finished runs again (fresh numbers); each results file replaced once complete
    workers: int | None = None  # mini tier: runs side by side, one CPU thread each (None: default_mini_workers)
    skip_missing: bool = False  # train the runs whose inputs are here; the others are reported as not run
    download: bool = True  # fetch the datasets and weight files the runs need and lack before checking them
    max_steps: int | None = None  # a rehearsal: each run cut to its first max_steps iterations
    # time the runs' training shapes here before the plan (``calibration``); None: on a GPU at full scale, and not
    # for a plan alone (``plan_without_training``)
    calibrate: bool | None = None

    def __post_init__(self) -> None:
        object.__setattr__(self, "tier", Tier(self.tier))  # "smoke" as given by a caller: the same tier
        self.check_rehearsal()

    @property
    def refusal_subject(self) -> str:
        return f"paper {self.key}"

    def missing_refusal(self, missing: Sequence[checks.MissingInput], runs: Sequence[str]) -> InputError:
        """Every missing input with the runs it blocks, and how to train the others (``preflight.refusal``)."""
        return InputError(checks.refusal(self.key, missing, runs))

    @property
    def output_roots(self) -> tuple[Path, Path]:
        """Where the runs and results go: a rehearsal's apart from the reproductions'."""
        if self.max_steps is None:
            return self.runs_root, self.results_root
        return rehearsal_root(self.runs_root), rehearsal_root(self.results_root)

    def planned(self) -> tuple[list[PlannedRun], list[LinearRun]]:
        """Every recipe x seed of this tier and every linear plan, as they would train now (nothing checked or
        written): a results file of another recipe than its plan's is stale."""
        deep, linear_paths = paper_runs(self.recipes_dir, self.key, self.only)
        seeds = self.seeds
        if is_study(self.key):  # its seeds at full scale, its mini data set's runs at the mini tier
            study, recipes = load_study(self.recipes_dir, self.key), load_paper(self.key, Path(self.recipes_dir))
            deep, seeds = study_plan(recipes, study, self.tier, deep, self.seeds, MINI_SEEDS)
        elif self.tier == Tier.MINI:  # the headline comparison only (within --only, if given); no linear plans
            comparison = load_mini_comparison(self.recipes_dir, self.key)
            paper = load_paper(self.key, Path(self.recipes_dir))
            chosen = mini_runs(paper, comparison, mini_file(self.recipes_dir, self.key))
            deep = [run for run in chosen if not self.only or run.id in self.only]
            linear_paths, seeds = [], self.seeds if self.seeds is not None else MINI_SEEDS
        if self.max_steps is not None:  # a rehearsal of the deep runs' first steps: the linear plans have none
            linear_paths = []
        runs_root, results_root = self.output_roots
        plans = plan_runs(self.key, deep, seeds, self.tier, runs_root, results_root, self.pipeline, self.readings)
        linear_runs = plan_linear_runs(self.key, linear_paths, self.tier, results_root, runs_root)
        linear_runs = selected_linear_runs(linear_runs, self.only)
        return plans, linear_runs

    def plan_setting(self, device: torch.device | None) -> PlanSetting:
        """The plan's view of where the runs train: on ``device`` here, or (None) where each job runs."""
        if device is None:
            kind = chosen_device(self.device).type if self.device else "cuda"  # jobs go to GPUs unless told
            text, gpu = f"{self.device or 'the default device'}, chosen where each run trains", None
        else:
            kind, text = device.type, describe_device(device)
            gpu = torch.cuda.get_device_name(device) if device.type == "cuda" else None
            if kind == "cpu" and self.device is None and self.tier == Tier.FULL:  # it needs a GPU: planned for one
                kind, text = "cuda", f"{text}; planned as on a GPU, where a full-scale run trains"
            world = Process.from_environment().world_size
            text += f", {world} processes" if world > 1 else ""
        runs_root, results_root = self.output_roots
        return PlanSetting(
            key=self.key, tier=self.tier, data_root=self.data_root, runs_root=runs_root, results_root=results_root,
            device_text=text, device_type=kind, gpu_name=gpu, max_steps=self.max_steps, papers_dir=self.papers_dir,
        )  # fmt: skip

    def outline(
        self, device: torch.device | None, calibrate: bool = False
    ) -> tuple[list[PlannedRun], list[LinearRun], list[str]]:
        """Every planned run and linear run, and the plan that says what they need (``plan_report``; ``calibrate``:
        the training shapes of the runs to train timed on ``device`` first); a recipe problem is raised first."""
        plans, linear_runs = self.planned()
        self.check_recipes(plans)
        to_train = [self.trains_again or not is_finished(plan) for plan in plans]
        setting = self.plan_setting(device)
        if calibrate:
            setting = with_timings(
                setting, device, [plan.recipe for plan, train in zip(plans, to_train, strict=True) if train]
            )
        return plans, linear_runs, plan_lines(setting, plans, to_train, linear_runs)

    def calibrates(self, device: torch.device | None) -> bool:
        """Whether the preflight times the runs' shapes first: ``calibrate``, else on one GPU at full scale."""
        if self.calibrate is not None:
            return self.calibrate
        on_gpu = device is not None and device.type == "cuda" and not Process.from_environment().active
        return on_gpu and self.tier == Tier.FULL and self.max_steps is None

    def plan_without_training(self) -> list[str]:
        """The plan on the device a run would take (``--plan``): nothing refused, checked or written; the shapes
        timed with ``calibrate`` only. A device asked for and not here is an ``InputError`` (a GPU torch cannot use:
        the driver against the wheel's CUDA)."""
        device = Process.from_environment().device(self.device)
        plans, _, lines = self.outline(device, calibrate=bool(self.calibrate))
        try:
            if plans:  # linear runs are CPU work
                check_run_device(self.device, self.tier)
        except InputError as refused:
            lines.insert(2, f"  (a run would stop here: {refused})")
        return lines

    def preflight(self, log: Callable[[str], None] = print, *, device: torch.device | None = None) -> Preflight:
        """Plan every recipe x seed and every linear plan, say the plan (``log``; ``device``: where they train
        here, None: jobs), and check what they need before anything trains or is submitted; then prepare the
        image caches the runs left to train will train from (``pipeline.cache_preparation``: one process only; ``log``
        says what it writes). ``seeds`` applies to deep recipes; a linear plan pins its own base seed (its splits
        are its repetitions).

        Before the checks, the datasets and weight files the runs need and lack are fetched (``download``; one
        process only: under torchrun they must be here). Raises ``InputError`` listing every dataset and weight file
        still missing with the runs it blocks (unless
        ``skip_missing``: those runs are left out, said, and returned in ``not_run``), or naming a bad tolerances
        file (read now: a bad file should not cost a night of training before the tables fail).
        """
        plans, linear_runs, plan = self.outline(device, calibrate=self.calibrates(device))
        for line in plan:
            log(line)
        if self.download and not Process.from_environment().active:  # several processes do not fetch at once
            fetch_missing_inputs(plans, linear_runs, self.data_root, log, progress=self.progress)
        plans, linear_runs, not_run = self.check_before_training(plans, linear_runs, log, self.tables_root)
        tolerances = load_tolerances(self.tolerances_path)
        self.prepare_caches(plans, log)  # last: nothing is written unless every check passed
        return Preflight(plans, linear_runs, tolerances, not_run)

    def build_tables(self, tolerances: Tolerances, log: Callable[[str], None] = print) -> BuiltPages:
        """The paper's (or study's) pages at this tier from every results file of it there is, and the index
        (``tables.builder``); none for a rehearsal."""
        from dml_core.tables.builder.pages import BuiltPages, build_pages  # see the TYPE_CHECKING import

        if self.max_steps is not None:
            log(f"rehearsal: no tables (its results, under {self.output_roots[1]}, stand for no published row)")
            return BuiltPages()
        return build_pages(
            [self.key],
            self.tier,
            results_root=self.results_root,
            tables_root=self.tables_root,
            tolerances=tolerances,
            recipes_dir=Path(self.recipes_dir),
            papers_dir=self.papers_dir,
            data_root=resolve_data_root(self.data_root),
            log=log,
        )


def reproduce(paper: PaperRun, log: Callable[[str], None] = print, *, build_tables: bool = True) -> ReproduceReport:
    """Preflight, train every planned run in this process (skipping finished ones), run the linear plans,
    then build the tables (unless ``build_tables`` is false: a caller that builds several papers' pages at once).

    ``tier=Tier.MINI`` runs the paper's headline comparison (``reproduce/<key>/mini.yaml``, seeds 0-2 unless given),
    and writes ``tables/mini/<key>.md``; a study (``fair``) runs every run over its study's seeds, its mini data set's
    runs at the mini tier, and writes its own tables; a rehearsal (``max_steps``) cuts each full-scale recipe to its
    first steps, into ``rehearsal/`` folders, never into tables. The mini tier and rehearsals run no linear plans.

    A run that stops on a non-finite loss is recorded in ``failed`` and the others still run; a missing
    dataset or weight file stops everything before any training, listing all that is missing, unless
    ``paper.skip_missing``: the runs it blocks are then in ``not_run``. Each run's line names its device.
    The mini tier's runs train side by side in worker processes of one CPU thread each (``side_by_side``;
    ``paper.workers`` of them, by default one per core on the CPU), so their numbers do not depend on the core count.
    ``dml_core.runner.jobs.launch_paper`` is the same with each run submitted as a job. Under torchrun every
    process runs this and trains each run together with the others; only rank 0 logs, runs the (CPU) linear
    plans and builds the tables.
    """
    process = Process.from_environment()
    if not process.is_main:
        log = _quiet
    device = paper.training_device(deep_runs=bool(paper.planned()[0]))
    plans, linear_runs, tolerances, not_run = paper.preflight(log, device=device)
    report = ReproduceReport(not_run=dict(not_run))
    to_train = [paper.trains_again or not is_finished(plan) for plan in plans]
    numbered = list(enumerate(plans, start=1))  # (position in the plan, run)
    on = describe_device(device)
    if paper.tier == Tier.MINI and not process.active:
        _train_side_by_side(paper, numbered, to_train, report, log, on)
    else:
        _train_one_after_another(paper, numbered, to_train, report, log, on)
    if process.is_main:
        trained, skipped = reproduce_linear(
            linear_runs, data_root=paper.data_root, jobs=paper.linear_jobs, log=log, rerun=paper.rerun
        )
        report.trained += trained
        report.skipped += skipped
        if build_tables:
            report.tables = paper.build_tables(tolerances, log)
    return report


def _skipped(plan: PlannedRun, prefix: str, report: ReproduceReport, log: Callable) -> None:
    log(f"{prefix}: finished earlier ({plan.results_path}), skipped")
    report.skipped.append(plan.name)


def _train_one_after_another(
    paper: PaperRun,
    numbered: list[tuple[int, PlannedRun]],
    to_train: list[bool],
    report: ReproduceReport,
    log: Callable,
    device: str,
) -> None:
    clock = RunClock()
    for (number, plan), train_it in zip(numbered, to_train, strict=True):
        prefix = f"[{number}/{len(numbered)}] {plan.name}"
        if not train_it:
            _skipped(plan, prefix, report, log)
            continue
        log(f"{prefix}: {paper.training_line(plan, device)}{clock.eta(sum(to_train[number - 1 :]))}")
        clock.start()
        try:
            paper.train(plan)
        except NonFiniteError as error:
            log(f"{prefix}: FAILED: {error}")
            report.failed[plan.name] = str(error)
            continue
        finally:
            clock.stop()
        report.trained.append(plan.name)


def _train_side_by_side(
    paper: PaperRun,
    numbered: list[tuple[int, PlannedRun]],
    to_train: list[bool],
    report: ReproduceReport,
    log: Callable,
    device: str,
) -> None:
    """Every run in worker processes of one CPU thread each. The log names the runs, then each as it ends (an
    exception other than a non-finite loss stops the others and is raised here)."""
    total = len(numbered)
    for (number, plan), train_it in zip(numbered, to_train, strict=True):
        if not train_it:
            _skipped(plan, f"[{number}/{total}] {plan.name}", report, log)
    numbered = [item for item, train_it in zip(numbered, to_train, strict=True) if train_it]
    if not numbered:
        return
    workers = min(paper.workers or default_mini_workers(paper.device), len(numbered))
    runs = counted(len(numbered), "run") + (" side by side" if len(numbered) > 1 else "")
    log(f"{paper.key}: {runs} in {counted(workers, 'worker process')}, one CPU thread each")
    for number, plan in numbered:
        log(f"[{number}/{total}] {plan.name}: {paper.training_line(plan, device)}")
    quiet = replace(paper, progress=False)  # bars of several workers would interleave
    started, ended = time.perf_counter(), 0
    number_of = {plan.name: number for number, plan in numbered}
    with closing(run_side_by_side(quiet.train, [plan for _, plan in numbered], workers)) as outcomes:
        for plan, outcome in outcomes:
            ended, number = ended + 1, number_of[plan.name]
            prefix = f"[{number}/{total}] {plan.name}"
            if isinstance(outcome, NonFiniteError):
                log(f"{prefix}: FAILED: {outcome}")
                report.failed[plan.name] = str(outcome)
                continue
            if isinstance(outcome, BaseException):
                raise outcome
            elapsed = time.perf_counter() - started
            eta = side_by_side_eta(elapsed, ended, len(numbered), workers)
            log(f"{prefix}: trained ({readable_duration(elapsed)} since the start){eta}")
            report.trained.append(plan.name)


def default_mini_workers(device: str | None) -> int:
    """One worker per core where the mini runs train on the CPU; one where they go to a GPU."""
    return available_cores() if chosen_device(device).type == "cpu" else 1


def _quiet(message: str) -> None:
    """The log of processes other than rank 0: they train, rank 0 reports."""


def reproduce_paper(key: str, *, log: Callable[[str], None] = print, **options: Any) -> ReproduceReport:
    """``reproduce(PaperRun(key, **options), log)``: ``options`` are ``PaperRun``'s fields."""
    return reproduce(PaperRun(key, **options), log)
