"""Which runs a paper's reproduction trains: every run x seed of its recipe files (or the mini tier's headline
comparison), each resolved under the chosen readings and tier, with where it writes; its linear plans; what is
finished already."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from functools import cached_property
from pathlib import Path

from dml_core.data.registry import DatasetSpec, get_spec
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


@dataclass(frozen=True)
class PlannedRun:
    """One run x seed: the resolved recipe (seed set, readings chosen, shrunk to its tier) and where it
    writes."""

    run: RunDefinition
    overrides: tuple[str, ...]
    recipe: Recipe
    run_dir: Path
    results_path: Path
    tier: Tier = Tier.FULL

    @property
    def recipe_path(self) -> Path:
        """The recipe file that declares the run."""
        return self.run.file

    @property
    def name(self) -> str:
        """``<run name> seed <seed>``: how logs and reports name the run (the run name carries any non-default
        readings after a ``~``)."""
        return f"{self.recipe.run_name} seed {self.recipe.training.seed}"

    @cached_property
    def dataset(self) -> DatasetSpec:
        """The spec of the recipe's ``data.dataset``, looked up once for the preflight's checks."""
        return get_spec(self.recipe.data.dataset)


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
    plans = []
    for run in runs:
        for seed in seeds if seeds is not None else [run.recipe(choices).training.seed]:
            overrides = (f"training.seed={seed}",) + ((f"data.pipeline={pipeline}",) if pipeline else ())
            recipe = resolve(run, choices, overrides, tier)
            if recipe.paper != key:
                raise InputError(f"{run.file}: field paper: expected {key!r} (its folder), found {recipe.paper!r}")
            plans.append(
                PlannedRun(
                    run=run,
                    overrides=overrides,
                    recipe=recipe,
                    run_dir=run_folder(runs_root, key, recipe.run_name, seed, tier),
                    results_path=results_file(results_root, key, recipe.run_name, seed, tier),
                    tier=tier,
                )
            )
    return plans


def is_finished(plan: PlannedRun) -> bool:
    """A results file for exactly this recipe (same content hash, so the same seed and smoke settings) exists
    (whether or not its checkpoint was kept)."""
    return is_finished_run(plan.results_path, plan.recipe)
