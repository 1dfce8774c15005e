"""The paper runner behind ``dml reproduce KEY`` and the ``reproduce-<key>`` nox sessions.

For one paper: expand the runs of ``reproduce/<key>/*.yaml`` (``dml_core.recipes``) under the chosen readings,
check every run's component parameters and that their datasets and weight files are on this machine (saying how
to prepare what is missing), train every run x seed (resumable: a run whose results file matches the recipe's
content hash is skipped, an interrupted one continues from its checkpoint; ``rerun=True`` trains finished runs
again and replaces each results file once the new one is complete), then build the tables. Each run's log line
gives an ETA for the runs left, from the pace of those this invocation trained.
``smoke=True`` runs each recipe's smoke version (embedded dataset, random init, no weights needed).
``mini=True`` runs the paper's headline comparison (``reproduce/<key>/mini.yaml``) in each recipe's mini version
(the larger embedded set, a narrowed backbone, seeds 0-2 unless given), evaluated before and after training, and
writes ``tables/mini/<key>.md`` (``dml_core.tables.mini``); no linear plans.

A paper's linear plans (``reproduce/<key>/linear/*.yaml``, anml Table 2) run after its deep recipes, into the
same results folder (``dml_core.linear.reproduce``); their smoke versions take seconds on the CPU.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from dml_core.data.image_cache import cache_problem
from dml_core.data.index import index_path
from dml_core.data.registry import get_spec
from dml_core.errors import InputError
from dml_core.eta import RunClock
from dml_core.linear.plan import LinearPlan, linear_plan_paths, load_linear_plan, table2_row_id
from dml_core.linear.reproduce import LinearRun, missing_linear_inputs, plan_linear_runs, reproduce_linear
from dml_core.models.weights import WEIGHT_FILES, missing_weights_message, weights_cache_dir
from dml_core.output_paths import results_file, run_folder
from dml_core.recipe import Recipe, mini_version, smoke_version
from dml_core.recipes.catalog import check_reading_choices, load_paper, recipe_files
from dml_core.recipes.components import located_problems
from dml_core.recipes.compose import RunDefinition
from dml_core.recipes.mini import load_mini_comparison, mini_file, mini_runs
from dml_core.tables import PaperTables, Tolerances, build_paper_tables, load_tolerances, write_index
from dml_core.tables.index_check import default_data_root
from dml_core.tables.mini import MiniPage, build_mini_page
from dml_core.training.builders import data_root as resolve_data_root
from dml_core.training.builders import transform_config
from dml_core.training.trainer import is_finished_run
from dml_core.writable import require_writable_file, require_writable_folder


@dataclass(frozen=True)
class PlannedRun:
    """One run x seed: the resolved recipe (seed set, readings chosen, smoke- or mini-shrunk if asked) and where it
    writes."""

    run: RunDefinition
    overrides: tuple[str, ...]
    recipe: Recipe
    run_dir: Path
    results_path: Path
    smoke: bool = False
    mini: bool = False

    @property
    def recipe_path(self) -> Path:
        """The recipe file that declares the run."""
        return self.run.file

    @property
    def name(self) -> str:
        """``<run name> seed <seed>``: how logs and reports name the run (the run name carries any non-default
        readings after a ``~``)."""
        return f"{self.recipe.run_name} seed {self.recipe.training.seed}"


@dataclass
class ReproduceReport:
    """What a paper run did: runs trained, skipped as finished, failed (with the reason), and the tables."""

    trained: list[str] = field(default_factory=list)
    skipped: list[str] = field(default_factory=list)
    failed: dict[str, str] = field(default_factory=dict)
    tables: PaperTables | MiniPage | None = None


# The mini tier's seeds when none are given: its page reports mean +- std over them.
MINI_SEEDS = (0, 1, 2)


def paper_runs(recipes_dir: Path, key: str, only: Sequence[str] = ()) -> tuple[list[RunDefinition], list[Path]]:
    """The deep runs of ``<recipes_dir>/<key>/*.yaml`` (sorted by id) and the linear plans
    ``<recipes_dir>/<key>/linear/*.yaml``, restricted by ``only`` when given: deep run ids, plan stems, or the ids
    of single linear runs (a plan's method on its data set, e.g. ``lanml-plus-uci-wine``: its plan is kept, and
    ``PaperRun.preflight`` keeps that method alone)."""
    folder = Path(recipes_dir) / key
    deep = list(load_paper(key, Path(recipes_dir)).runs) if recipe_files(folder) else []
    linear = linear_plan_paths(recipes_dir, key)
    if not deep and not linear:
        raise InputError(f"{folder}: no recipes (*.yaml) for paper {key!r}")
    if only:
        linear_ids = {path: linear_run_ids(load_linear_plan(path)) for path in linear}
        known = [run.id for run in deep] + [p.stem for p in linear] + [i for ids in linear_ids.values() for i in ids]
        unknown = sorted(set(only) - set(known))
        if unknown:
            raise InputError(f"--only: expected run ids of {key} ({', '.join(known)}), found {', '.join(unknown)}")
        deep = [run for run in deep if run.id in only]
        linear = [path for path in linear if path.stem in only or set(linear_ids[path]) & set(only)]
    return deep, linear


def linear_run_ids(plan: LinearPlan) -> list[str]:
    """The ids of a linear plan's runs: each method's Table 2 row on the plan's data set."""
    return [table2_row_id(method, plan.dataset) for method in plan.methods]


def selected_linear_runs(runs: Sequence[LinearRun], only: Sequence[str]) -> list[LinearRun]:
    """``runs`` kept by ``only`` (all of them without it; all of a plan named by its stem; else the named runs)."""
    if not only:
        return list(runs)
    named = set(only)
    return [
        run
        for run in runs
        if (run.plan_path is not None and run.plan_path.stem in named)
        or table2_row_id(run.method, run.plan.dataset) in named
    ]


def plan_runs(
    key: str,
    runs: Sequence[RunDefinition],
    seeds: Sequence[int] | None,
    smoke: bool,
    runs_root: Path,
    results_root: Path,
    pipeline: str | None = None,
    readings: Mapping[str, str] | None = None,
    mini: bool = False,
) -> list[PlannedRun]:
    """Every run x seed (``seeds=None``: each run's own ``training.seed``) under ``readings`` (reading -> value,
    for the runs that rest on it; the others at their defaults), shrunk to its smoke or mini version if asked;
    ``pipeline`` overrides every recipe's ``data.pipeline``. The seed and pipeline are recorded as the run's
    overrides."""
    choices = dict(readings or {})
    check_reading_choices(runs, choices, what=f"the runs of {key}")
    plans = []
    for run in runs:
        for seed in seeds if seeds is not None else [run.recipe(choices).training.seed]:
            overrides = (f"training.seed={seed}",) + ((f"data.pipeline={pipeline}",) if pipeline else ())
            recipe = run.recipe(choices, overrides)
            if recipe.paper != key:
                raise InputError(f"{run.file}: field paper: expected {key!r} (its folder), found {recipe.paper!r}")
            if smoke:
                recipe = smoke_version(recipe)
            if mini:
                recipe = mini_version(recipe)
            plans.append(
                PlannedRun(
                    run=run,
                    overrides=overrides,
                    recipe=recipe,
                    run_dir=run_folder(runs_root, key, recipe.run_name, seed, smoke, mini),
                    results_path=results_file(results_root, key, recipe.run_name, seed, smoke, mini),
                    smoke=smoke,
                    mini=mini,
                )
            )
    return plans


def recipe_problems(plans: Sequence[PlannedRun]) -> list[str]:
    """Every component parameter a planned recipe gets wrong (a typo in a loss parameter, an unknown sampler),
    each naming the file that set it, the field and what is accepted."""
    lines = [
        line for plan in plans for line in located_problems(plan.recipe, plan.run.settings.origins, plan.recipe_path)
    ]
    return list(dict.fromkeys(lines))


def missing_inputs(plans: Sequence[PlannedRun], data_root: Path | None) -> list[str]:
    """What the runs need and this machine lacks (prepared datasets, weight files), each with how to get it."""
    problems: list[str] = []
    for plan in plans:
        recipe = plan.recipe
        root = resolve_data_root(recipe, data_root)
        spec = get_spec(recipe.data.dataset)
        if not spec.generated and not index_path(root / spec.name).is_file():
            problems.append(
                f"dataset {spec.name} ({spec.title}) is not prepared under {root}: run "
                f"`dml prepare {spec.name} --root {root}` ({spec.how_to_prepare})"
            )
        elif recipe.data.pipeline == "cache" and not spec.generated:  # the generated set's is built on first use
            config = transform_config(recipe)
            problem = cache_problem(spec.name, root, "train", config.resize_mode, config.resize)
            if problem:
                problems.append(f"{plan.recipe_path}: data.pipeline cache: {problem}")
        weights = recipe.model.weights
        if weights == "pretrained":
            expected = WEIGHT_FILES[recipe.model.backbone]
            if not (weights_cache_dir() / expected.file_name).is_file():
                problems.append(
                    missing_weights_message(expected, [weights_cache_dir()])
                    + f" `dml weights --fetch {recipe.model.backbone}` does this where downloads work."
                )
        elif weights != "random" and not Path(weights).expanduser().is_file():
            problems.append(f"{plan.recipe_path}: field model.weights: file {weights} not found")
    return list(dict.fromkeys(problems))  # one line per missing thing, in first-seen order


def unwritable_outputs(
    plans: Sequence[PlannedRun], linear_runs: Sequence[LinearRun], tables_root: Path, shown: int = 5
) -> list[str]:
    """Every place the runs and the tables will write that cannot take a file (read-only, a file in the way),
    found before anything trains; the first ``shown`` named, the rest counted."""
    checks = [(require_writable_folder, plan.run_dir, "run folder") for plan in plans]
    checks += [(require_writable_file, plan.results_path, "results file") for plan in plans]
    checks += [(require_writable_file, run.results_path, "results file") for run in linear_runs]
    checks += [(require_writable_file, run.splits_path, "run folder") for run in linear_runs if run.splits_path]
    checks.append((require_writable_folder, tables_root, "tables folder"))
    problems = []
    for check, path, what in checks:
        try:
            check(path, what)
        except InputError as error:
            problems.append(str(error))
    problems = list(dict.fromkeys(problems))
    more = len(problems) - shown
    return problems[:shown] + ([f"... and {more} more"] if more > 0 else [])


def is_finished(plan: PlannedRun) -> bool:
    """A results file for exactly this recipe (same content hash, so the same seed and smoke settings) exists
    (whether or not its checkpoint was kept)."""
    return is_finished_run(plan.results_path, plan.recipe)


@dataclass(frozen=True)
class PaperRun:
    """One paper's reproduction: which runs (``smoke``, ``mini``, ``seeds``, ``only``), where it reads and writes, and
    how it trains (``data_root``, ``device``, ``progress``): the options of ``dml reproduce``, whichever runner
    (this process: ``reproduce``; jobs: ``dml_core.launch.launch_paper``) trains the runs."""

    key: str
    recipes_dir: Path
    runs_root: Path
    results_root: Path
    tables_root: Path
    smoke: bool = False
    seeds: Sequence[int] | None = None
    only: Sequence[str] = ()
    data_root: Path | None = None
    device: str | None = None
    papers_dir: Path | None = None
    tolerances_path: Path | None = None
    progress: bool = True
    linear_jobs: int = 1  # processes for the linear plans' grid searches (the numbers do not depend on it)
    pipeline: str | None = None  # "pil" or "cache" for every deep recipe's data.pipeline; None: as the recipe says
    readings: Mapping[str, str] = field(default_factory=dict)  # reading -> value (``--reading``); others: defaults
    rerun: bool = False  # train finished runs again (fresh numbers); each results file replaced once complete
    mini: bool = False  # the headline comparison of reproduce/<key>/mini.yaml, mini versions, no linear plans

    def preflight(self) -> tuple[list[PlannedRun], list[LinearRun], Tolerances]:
        """Plan every recipe x seed and every linear plan, and check what they need before anything trains
        or is submitted. ``seeds`` applies to deep recipes; a linear plan pins its own base seed (its splits
        are its repetitions).

        Raises ``InputError`` listing every missing dataset and weight file, or naming a bad tolerances file
        (read now: a bad file should not cost a night of training before the tables fail).
        """
        if self.smoke and self.mini:
            raise InputError("--smoke and --mini: choose one tier")
        deep, linear_paths = paper_runs(self.recipes_dir, self.key, self.only)
        seeds = self.seeds
        if self.mini:  # the headline comparison only (within --only, if given); no linear plans
            comparison = load_mini_comparison(self.recipes_dir, self.key)
            paper = load_paper(self.key, Path(self.recipes_dir))
            chosen = mini_runs(paper, comparison, mini_file(self.recipes_dir, self.key))
            deep = [run for run in chosen if not self.only or run.id in self.only]
            linear_paths, seeds = [], self.seeds if self.seeds is not None else MINI_SEEDS
        plans = plan_runs(
            self.key, deep, seeds, self.smoke, self.runs_root, self.results_root, self.pipeline, self.readings,
            mini=self.mini,
        )  # fmt: skip
        linear_runs = plan_linear_runs(self.key, linear_paths, self.smoke, self.results_root, self.runs_root)
        linear_runs = selected_linear_runs(linear_runs, self.only)
        bad = recipe_problems(plans)
        if bad:
            raise InputError(f"paper {self.key}: {len(bad)} recipe problem(s):\n  " + "\n  ".join(bad))
        problems = missing_inputs(plans, self.data_root) + missing_linear_inputs(linear_runs, self.data_root)
        if problems:
            raise InputError(f"paper {self.key}: missing inputs:\n  " + "\n  ".join(problems))
        unwritable = unwritable_outputs(plans, linear_runs, self.tables_root)
        if unwritable:
            raise InputError(f"paper {self.key}: outputs that cannot be written:\n  " + "\n  ".join(unwritable))
        return plans, linear_runs, load_tolerances(self.tolerances_path)

    def train(self, plan: PlannedRun) -> Path:
        """Train one planned run where the plan says (resuming its checkpoint if any); return its results file."""
        from dml_core.training import train

        return train(
            plan.recipe,
            plan.run_dir,
            recipe_path=plan.recipe_path,
            overrides=list(plan.overrides),
            smoke=plan.smoke,
            mini=plan.mini,
            resume=True,
            data_root=self.data_root,
            device=self.device,
            progress=self.progress,
            results_path=plan.results_path,
            rerun=self.rerun,
        )

    def build_tables(self, tolerances: Tolerances, log: Callable[[str], None] = print) -> PaperTables | MiniPage:
        """``tables/[smoke/|mini/]<key>.md`` from every results file of the paper there is."""
        if self.mini:
            page = build_mini_page(self.key, self.results_root, self.tables_root, self.recipes_dir)
            log(f"tables: {page.markdown_path}")
            return page
        tables = build_paper_tables(
            self.key,
            results_root=self.results_root,
            tables_root=self.tables_root,
            recipes_dir=self.recipes_dir,
            tolerances=tolerances,
            smoke=self.smoke,
            papers_dir=self.papers_dir,
            data_root=self.data_root or default_data_root(),
        )
        log(f"tables: {tables.markdown_path}")
        for refusal in tables.refused:  # the results gate's: shown in no table
            log(f"results gate: REFUSED {refusal}")
        for note in tables.notes:
            log(f"results gate: note: {note}")
        log(f"tables index: {write_index(self.tables_root, tolerances, self.smoke, self.papers_dir)}")
        return tables


def reproduce(paper: PaperRun, log: Callable[[str], None] = print) -> ReproduceReport:
    """Preflight, train every planned run in this process (skipping finished ones), run the linear plans,
    then build the tables.

    A run that stops on a non-finite loss is recorded in ``failed`` and the others still run; a missing
    dataset or weight file stops everything before any training, listing all that is missing.
    ``dml_core.launch.launch_paper`` is the same with each run submitted as a job. Under torchrun every
    process runs this and trains each run together with the others; only rank 0 logs, runs the (CPU) linear
    plans and builds the tables.
    """
    from dml_core.training import NonFiniteError
    from dml_core.training.distributed import Process

    main_process = Process.from_environment().is_main
    if not main_process:
        log = _quiet
    plans, linear_runs, tolerances = paper.preflight()
    report = ReproduceReport()
    to_train = [paper.rerun or not is_finished(plan) for plan in plans]
    clock = RunClock()
    for number, (plan, train_it) in enumerate(zip(plans, to_train, strict=True), start=1):
        prefix = f"[{number}/{len(plans)}] {plan.name}"
        if not train_it:
            log(f"{prefix}: finished earlier ({plan.results_path}), skipped")
            report.skipped.append(plan.name)
            continue
        again = " again (--rerun)" if paper.rerun and plan.results_path.is_file() else ""
        eta = clock.eta(sum(to_train[number - 1 :]))  # this run and the ones after it
        tier = " (smoke)" if plan.smoke else " (mini)" if plan.mini else ""
        log(f"{prefix}: training{again}{tier} in {plan.run_dir}{eta}")
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
    if main_process:
        trained, skipped = reproduce_linear(
            linear_runs, data_root=paper.data_root, jobs=paper.linear_jobs, log=log, rerun=paper.rerun
        )
        report.trained += trained
        report.skipped += skipped
        report.tables = paper.build_tables(tolerances, log)
    return report


def _quiet(message: str) -> None:
    """The log of processes other than rank 0: they train, rank 0 reports."""


def reproduce_paper(key: str, *, log: Callable[[str], None] = print, **options: Any) -> ReproduceReport:
    """``reproduce(PaperRun(key, **options), log)``: ``options`` are ``PaperRun``'s fields."""
    return reproduce(PaperRun(key, **options), log)
