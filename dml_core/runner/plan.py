"""Which runs a paper's reproduction trains: every run x seed of its recipe files (or the mini tier's headline
comparison), each resolved under the chosen readings and tier, with where it writes; its linear plans; what is
finished already."""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from pathlib import Path

from dml_core.errors import InputError
from dml_core.finished_runs import is_finished_run
from dml_core.linear.plan import LinearPlan, linear_plan_paths, load_linear_plan, table2_row_id
from dml_core.output_paths import results_file, run_folder
from dml_core.recipes.catalog import check_reading_choices, load_paper, recipe_files
from dml_core.recipes.compose import RunDefinition
from dml_core.recipes.resolve import resolve
from dml_core.recipes.settings import Recipe
from dml_core.runner.linear import LinearRun
from dml_core.tier import Tier
from dml_core.training.run_description import PlannedRun

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
    tier: Tier,
    runs_root: Path,
    results_root: Path,
    pipeline: str | None = None,
    readings: Mapping[str, str] | None = None,
) -> list[PlannedRun]:
    """Every run x seed (``seeds=None``: each run's own ``training.seed``) under ``readings`` (reading -> value,
    for the runs that rest on it; the others at their defaults), shrunk to its ``tier``'s version;
    ``pipeline`` overrides every recipe's ``data.pipeline``. The seed and pipeline are recorded as the run's
    overrides."""
    choices = dict(readings or {})
    check_reading_choices(runs, choices, what=f"the runs of {key}")
    place = paper_place(key, tier, runs_root, results_root)
    plans = []
    for run in runs:
        for seed in seeds if seeds is not None else [run.recipe(choices).training.seed]:
            overrides = (f"training.seed={seed}",) + ((f"data.pipeline={pipeline}",) if pipeline else ())
            plan = plan_run(run, choices, overrides, tier, place)
            if plan.recipe.paper != key:
                raise InputError(f"{run.file}: field paper: expected {key!r} (its folder), found {plan.recipe.paper!r}")
            plans.append(plan)
    return plans


def plan_run(
    run: RunDefinition,
    readings: Mapping[str, str],
    overrides: Sequence[str],
    tier: Tier,
    place: Callable[[Recipe], tuple[Path, Path | None]],
) -> PlannedRun:
    """``run`` as it trains (``recipes.resolve``: under ``readings``, with ``overrides``, shrunk to ``tier``), where
    ``place`` puts the resolved recipe: its run folder and results file (None: the run folder's)."""
    recipe = resolve(run, readings, overrides, tier)
    run_dir, results_path = place(recipe)
    return PlannedRun(recipe, run_dir, results_path, tier, tuple(overrides), run)


def paper_place(key: str, tier: Tier, runs_root: Path, results_root: Path) -> Callable[[Recipe], tuple[Path, Path]]:
    """Where a paper's reproduction puts a run: ``output_paths.run_folder`` and ``results_file`` of its run name
    and seed."""

    def place(recipe: Recipe) -> tuple[Path, Path]:
        name, seed = recipe.run_name, recipe.training.seed
        return run_folder(runs_root, key, name, seed, tier), results_file(results_root, key, name, seed, tier)

    return place


def is_finished(plan: PlannedRun) -> bool:
    """A results file for exactly this recipe (same content hash, so the same seed and smoke settings) exists
    (whether or not its checkpoint was kept)."""
    return is_finished_run(plan.results_path, plan.recipe)
