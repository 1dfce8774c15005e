"""What a paper's runs need before anything trains: their component parameters, their datasets and weight files
on this machine (each missing one with the command that provides it and the runs it blocks: the others can train
without them, ``--skip-missing``), places they can write. The image caches they train from are prepared after these
checks pass (``pipeline.cache_preparation``)."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path

from dml_core.command_line import DML
from dml_core.data.index import index_path
from dml_core.errors import InputError
from dml_core.finished_runs import OtherRecipesResults, check_finished_run
from dml_core.models.glyph_pretraining import GLYPH_PRETRAINED  # pretrained on the spot where missing
from dml_core.models.weights import WEIGHT_FILES, find_weight_file, missing_weights_message
from dml_core.output_paths import data_root as resolve_data_root
from dml_core.pipeline.choice import requires_cache, wants_cache
from dml_core.pipeline.image_cache import cache_problem
from dml_core.runner.component_check import located_problems
from dml_core.runner.eta import counted
from dml_core.runner.linear import LinearRun, missing_uci_data
from dml_core.training.distributed import Process
from dml_core.training.run_description import PlannedRun
from dml_core.writable import require_writable_file, require_writable_folder


def recipe_problems(plans: Sequence[PlannedRun]) -> list[str]:
    """Every component parameter a planned recipe gets wrong (a typo in a loss parameter, an unknown sampler),
    each naming the file that set it, the field and what is accepted."""
    lines = [
        line for plan in plans for line in located_problems(plan.recipe, plan.run.settings.origins, plan.recipe_path)
    ]
    return list(dict.fromkeys(lines))


@dataclass
class MissingInput:
    """One input this machine lacks (a dataset, a weight file, a cache), the one command that provides it, and the
    runs it blocks (by name: ``PlannedRun.name``, ``LinearRun.name``)."""

    problem: str  # what is missing and how to get it, one line
    runs: list[str] = field(default_factory=list)

    def line(self, of_runs: int) -> str:
        """The problem, then the runs it blocks (of the ``of_runs`` planned)."""
        blocked = f"all {of_runs} runs" if len(self.runs) == of_runs > 1 else counted(len(self.runs), "run")
        return f"{self.problem}\n    blocks {blocked}: {', '.join(self.runs)}"


def _blocking(found: dict[str, MissingInput], problem: str, run: str) -> None:
    """Record that ``problem`` blocks ``run`` (one entry per problem, its runs in first-seen order)."""
    entry = found.setdefault(problem, MissingInput(problem))
    if run not in entry.runs:
        entry.runs.append(run)


PRESENT, MISSING, TO_BUILD = "present", "missing", "to be built"


@dataclass(frozen=True)
class RunInput:
    """One input of a run and its state on this machine: present, missing (``problem``: what is missing and the one
    command that provides it), or to be built before the run trains (a uint8 cache the preflight prepares)."""

    what: str
    state: str
    problem: str = ""


def run_inputs(plan: PlannedRun, data_root: Path | None, device_type: str = "cpu") -> list[RunInput]:
    """What ``plan`` reads: its dataset, its weight file, and the image cache it trains from on a device of
    ``device_type`` (under torchrun a missing one is missing: several processes do not build it)."""
    recipe = plan.recipe
    root = resolve_data_root(data_root, recipe.data.root)
    spec = plan.dataset
    inputs = []
    dataset = f"dataset {spec.name} under {root}"
    prepared = index_path(root / spec.name).is_file()
    if spec.generated:
        inputs.append(RunInput(dataset, PRESENT if prepared else TO_BUILD))
    elif not prepared:
        problem = (
            f"dataset {spec.name} ({spec.title}) is not prepared under {root}: run "
            f"`{DML} prepare {spec.name} --root {root}` ({spec.how_to_prepare})"
        )
        inputs.append(RunInput(dataset, MISSING, problem))
    else:
        inputs.append(RunInput(dataset, PRESENT))
    if not spec.generated and wants_cache(recipe.data, device_type):
        config = recipe.data.transforms
        cache = f"uint8 cache {spec.name}/train ({config.resize_mode} {config.resize}) under {root}"
        problem = cache_problem(spec, root, "train", config.resize_mode, config.resize)
        if problem is None:
            inputs.append(RunInput(cache, PRESENT))
        elif requires_cache(recipe.data) and Process.from_environment().active:
            # one process prepares it in the preflight (``pipeline.cache_preparation``), ranks of several do not
            inputs.append(RunInput(cache, MISSING, f"{plan.recipe_path}: data.pipeline cache: {problem}"))
        else:
            inputs.append(RunInput(cache, TO_BUILD))
    weights = recipe.model.weights
    if weights == "pretrained":
        expected = WEIGHT_FILES[recipe.model.backbone]
        what = f"weight file {expected.file_name} ({recipe.model.backbone})"
        if find_weight_file(expected) is not None:
            inputs.append(RunInput(what, PRESENT))
        else:
            problem = (
                missing_weights_message(expected)
                + f" `{DML} weights --fetch {recipe.model.backbone}` does this where downloads work."
            )
            inputs.append(RunInput(what, MISSING, problem))
    elif weights not in ("random", GLYPH_PRETRAINED):
        present = Path(weights).expanduser().is_file()
        problem = "" if present else f"{plan.recipe_path}: field model.weights: file {weights} not found"
        inputs.append(RunInput(f"weight file {weights}", PRESENT if present else MISSING, problem))
    return inputs


def missing_inputs(plans: Sequence[PlannedRun], data_root: Path | None) -> list[MissingInput]:
    """What the runs need and this machine lacks (prepared datasets, weight files; under torchrun, the image caches
    of runs that say ``data.pipeline: cache``), each with how to get it and the runs it blocks."""
    found: dict[str, MissingInput] = {}
    for plan in plans:
        for needed in run_inputs(plan, data_root):  # a cache the recipe asks for whatever the device
            if needed.state == MISSING:
                _blocking(found, needed.problem, plan.name)
    return list(found.values())  # one entry per missing thing, in first-seen order


def missing_linear_inputs(runs: Sequence[LinearRun], data_root: Path | None) -> list[MissingInput]:
    """The UCI data sets the linear runs need that are not prepared here, each with the runs it blocks."""
    found: dict[str, MissingInput] = {}
    for run in runs:
        problem = missing_uci_data(run, data_root)
        if problem:
            _blocking(found, problem, run.name)
    return list(found.values())


def refusal(key: str, missing: Sequence[MissingInput], runs: Sequence[str]) -> str:
    """The preflight's refusal: every missing input with the runs it blocks, then how to train the others (the
    option that trains the runs whose inputs are here, and ``--only``)."""
    blocked = {name for entry in missing for name in entry.runs}
    runnable = [name for name in runs if name not in blocked]
    lines = [f"paper {key}: missing inputs ({len(blocked)} of {counted(len(runs), 'run')} blocked):"]
    lines += [f"  {entry.line(len(runs))}" for entry in missing]
    here = (
        f"the {counted(len(runnable), 'run')} whose inputs are here ({', '.join(runnable)})"
        if runnable
        else ("the runs whose inputs are here (none yet)")
    )
    lines.append(
        f"`{DML} reproduce {key} --skip-missing` trains {here} and names those it leaves out; "
        f"`{DML} reproduce {key} --only ID ...` chooses runs by id"
    )
    return "\n".join(lines)


def results_of_other_recipes(plans: Sequence[PlannedRun]) -> list[str]:
    """Every planned run whose results file holds another recipe's finished run (an edited recipe, another
    version of the code's shrink): training would replace those numbers, so it is refused unless ``--rerun``
    (the finished-run rule, ``finished_runs``)."""
    problems = []
    for plan in plans:
        try:
            check_finished_run(plan.results_path, plan.recipe)
        except OtherRecipesResults as error:  # a damaged file is raised as it is: one line
            problems.append(str(error))
    return problems


def unwritable_outputs(
    plans: Sequence[PlannedRun],
    linear_runs: Sequence[LinearRun],
    tables_root: Path | None,
    shown: int = 5,
    names: tuple[str, str] = ("run folder", "results file"),
) -> list[str]:
    """Every place the runs and the tables (``tables_root``; None: none built) will write that cannot take a file
    (read-only, a file in the way), found before anything trains, each named as ``names`` say (the run folders',
    the results files'); the first ``shown`` named, the rest counted."""
    folder, file = names
    checks = [(require_writable_folder, plan.run_dir, folder) for plan in plans]
    checks += [(require_writable_file, plan.results_path, file) for plan in plans]
    checks += [(require_writable_file, run.results_path, file) for run in linear_runs]
    checks += [(require_writable_file, run.splits_path, folder) for run in linear_runs if run.splits_path]
    if tables_root is not None:
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
