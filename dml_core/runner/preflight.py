"""What a paper's runs need before anything trains: their component parameters, their datasets and weight files
on this machine (saying how to prepare what is missing), places they can write. The image caches they train from
are prepared after these checks pass (``cache_preparation``)."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

from dml_core.data.image_cache import cache_problem
from dml_core.data.index import index_path
from dml_core.errors import InputError
from dml_core.finished_runs import OtherRecipesResults, check_finished_run
from dml_core.models.glyph_pretraining import GLYPH_PRETRAINED  # pretrained on the spot where missing
from dml_core.models.weights import WEIGHT_FILES, missing_weights_message, weights_cache_dir
from dml_core.output_paths import data_root as resolve_data_root
from dml_core.recipes.components import located_problems
from dml_core.runner.linear import LinearRun
from dml_core.runner.plan import PlannedRun
from dml_core.training.distributed import Process
from dml_core.writable import require_writable_file, require_writable_folder


def recipe_problems(plans: Sequence[PlannedRun]) -> list[str]:
    """Every component parameter a planned recipe gets wrong (a typo in a loss parameter, an unknown sampler),
    each naming the file that set it, the field and what is accepted."""
    lines = [
        line for plan in plans for line in located_problems(plan.recipe, plan.run.settings.origins, plan.recipe_path)
    ]
    return list(dict.fromkeys(lines))


def missing_inputs(plans: Sequence[PlannedRun], data_root: Path | None) -> list[str]:
    """What the runs need and this machine lacks (prepared datasets, weight files; under torchrun, the image caches
    of runs that say ``data.pipeline: cache``), each with how to get it."""
    problems: list[str] = []
    for plan in plans:
        recipe = plan.recipe
        root = resolve_data_root(data_root, recipe.data.root)
        spec = plan.dataset
        if not spec.generated and not index_path(root / spec.name).is_file():
            problems.append(
                f"dataset {spec.name} ({spec.title}) is not prepared under {root}: run "
                f"`dml prepare {spec.name} --root {root}` ({spec.how_to_prepare})"
            )
        elif recipe.data.pipeline == "cache" and not spec.generated and Process.from_environment().active:
            # one process prepares it in the preflight (``cache_preparation``), ranks of several do not
            config = recipe.data.transforms
            problem = cache_problem(spec, root, "train", config.resize_mode, config.resize)
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
        elif weights not in ("random", GLYPH_PRETRAINED) and not Path(weights).expanduser().is_file():
            problems.append(f"{plan.recipe_path}: field model.weights: file {weights} not found")
    return list(dict.fromkeys(problems))  # one line per missing thing, in first-seen order


def results_of_other_recipes(plans: Sequence[PlannedRun]) -> list[str]:
    """Every planned run whose results file holds another recipe's finished run (an edited recipe, another
    version of the code's shrink): training would replace those numbers, so it is refused unless ``--rerun``
    (the finished-run rule ``dml train`` follows too)."""
    problems = []
    for plan in plans:
        try:
            check_finished_run(plan.results_path, plan.recipe)
        except OtherRecipesResults as error:  # a damaged file is raised as it is: one line
            problems.append(str(error))
    return problems


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
