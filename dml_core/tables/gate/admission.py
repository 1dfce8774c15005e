"""The results gate: which results files may stand for a published row.

A results file is data anyone can hand the table builder, so none is trusted: a deep-network file is admitted only
when it is the pinned run's (its recipe's content hash under the readings it records), for rows, dataset and seed of
that run, with complete, finite evaluations that give its own selection (the whole list: ``results_problem`` and
docs/recipes.md). Anything else is a :class:`~dml_core.tables.gate.join.Refusal` naming the file, the field, what
was expected and what was found; the tables never show it as a row, and ``dml tables --check`` fails on it.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path

from pydantic import ValidationError

from dml_core.data.registry import DATASETS
from dml_core.errors import InputError
from dml_core.evaluation.protocols import run_recall_ks
from dml_core.evaluation.registry import METRICS
from dml_core.published import PublishedPaper, find_row
from dml_core.recipes.resolve import resolve
from dml_core.recipes.settings import Recipe, forward_precision
from dml_core.results import AnyResults, ResultsFile, SelectionRecord, select_every_rule
from dml_core.schema import format_validation_error
from dml_core.tables.gate.index_check import IndexCheck
from dml_core.tables.gate.join import LoadedResults, Refusal, read_results_folder
from dml_core.tables.gate.planned import Plan
from dml_core.tier import Tier

# The ``--set`` overrides a pinned run may carry: which seed it is, and how its images reach the model.
ALLOWED_OVERRIDES = ("training.seed", "data.pipeline")


@dataclass(frozen=True)
class Admission:
    """What the gate made of a results folder: the files the tables take, those it refused (with why), and what
    it could not check (one line each)."""

    admitted: list[LoadedResults]
    refused: list[Refusal]
    notes: list[str]


class _Refused(Exception):
    """One reason to refuse a file (internal: becomes a Refusal)."""


def _field(name: str, expected: str, found: object) -> _Refused:
    return _Refused(f"field {name}: expected {expected}, found {found}")


def _rows_text(pairs) -> str:
    return ", ".join(f"{table}/{row}" for table, row in pairs) or "none"


def check_not_a_rehearsal(results: ResultsFile) -> None:
    """A rehearsal trained only the first steps of its recipe: its numbers stand for no row."""
    rehearsal = results.rehearsal
    if rehearsal is not None:
        raise _field(
            "rehearsal",
            "none (a run trained as long as its recipe says)",
            f"a rehearsal cut to {rehearsal.max_steps} of its recipe's {rehearsal.recipe_iterations} iterations",
        )


def check_rows(results: AnyResults, paper: PublishedPaper, tier: Tier) -> None:
    """The file names this paper and rows that exist; in full tables, rows of its dataset."""
    if results.paper != paper.paper.key:
        raise _field("paper", repr(paper.paper.key), repr(results.paper))
    for target in results.targets:
        try:
            row = find_row(paper, target.table, target.row)
        except InputError as error:
            raise _Refused(f"field targets: {error}") from None
        if tier != Tier.SMOKE and row.dataset != results.dataset:
            generated = results.dataset in DATASETS and DATASETS[results.dataset].generated
            why = " (a generated set of the CPU tiers: its numbers stand for no published row)" if generated else ""
            raise _field(
                "dataset", f"{row.dataset!r} (the dataset of {target.table}/{target.row})", f"{results.dataset!r}{why}"
            )


def _chosen_readings(results: ResultsFile, run) -> dict[str, str]:
    readings = results.recipe.content.get("readings", {})
    if not isinstance(readings, Mapping) or not all(isinstance(v, str) for v in readings.values()):
        raise _field("recipe.content.readings", "{reading: value}", f"{readings!r:.80}")
    for name, value in readings.items():
        if name not in run.reading_names:
            offered = ", ".join(run.reading_names) or "none"
            raise _field(f"recipe.content.readings.{name}", f"a reading run {run.id} rests on ({offered})", repr(name))
        values = run.paper_assumptions.readings[name].values
        if value not in values:
            raise _field(f"recipe.content.readings.{name}", f"one of {', '.join(values)}", repr(value))
    return dict(readings)


def _describe(run_id: str, readings: Mapping[str, str], overrides: list[str], tier: Tier) -> str:
    parts = [f"run {run_id} of the recipes"]
    if readings:
        parts.append("under " + ", ".join(f"{name}={value}" for name, value in sorted(readings.items())))
    if overrides:
        parts.append("with " + ", ".join(overrides))
    if tier == Tier.SMOKE:
        parts.append("smoke-shrunk")
    return " ".join(parts)


def pinned_recipe(results: ResultsFile, plan: Plan, tier: Tier) -> Recipe:
    """The recipe the file must have run: its run in the catalog under its readings and allowed overrides at
    ``tier``, as ``recipes.resolve`` makes it for training, and its hash checked against the file's (see the module
    docstring)."""
    record = results.recipe
    run = plan.definitions.get(record.id)
    if run is None:
        raise _field("recipe.id", f"one of the {len(plan.definitions)} runs of the recipes", repr(record.id))
    other = [text for text in record.overrides if text.partition("=")[0].strip() not in ALLOWED_OVERRIDES]
    if other:
        raise _field(
            "recipe.overrides",
            f"only {' and '.join(ALLOWED_OVERRIDES)} (a run with other settings is not the pinned run)",
            ", ".join(other),
        )
    readings = _chosen_readings(results, run)
    try:
        recipe = resolve(run, readings, record.overrides, tier)
    except InputError as error:
        raise _Refused(f"field recipe.overrides: {error}") from None
    if record.sha256 not in recipe.hashes_of_this_computation():
        raise _field(
            "recipe.sha256",
            f"{recipe.content_hash()[:12]}… ({_describe(run.id, readings, record.overrides, tier)})",
            f"{record.sha256[:12]}…: the recipe changed since the run, or the run was not this recipe",
        )
    try:
        recorded = Recipe.model_validate(record.content)
    except ValidationError as error:
        raise _field("recipe.content", "the settings of a recipe", format_validation_error(error)) from None
    if record.sha256 not in recorded.hashes_of_this_computation():
        raise _field(
            "recipe.content",
            f"settings of hash {record.sha256[:12]}… (recipe.sha256)",
            f"settings of hash {recorded.content_hash()[:12]}…",
        )
    if recorded.variant != recipe.variant:
        raise _field("recipe.content.variant", repr(recipe.variant), repr(recorded.variant))
    return recipe


def check_identity(results: ResultsFile, recipe: Recipe) -> None:
    """Rows, dataset, seed and backbone are the pinned recipe's, and the precision it records the one its recipe
    trains in on the device it ran on."""
    pinned = [(target.table, target.row) for target in recipe.targets]
    for target in results.targets:
        if (target.table, target.row) not in pinned:
            raise _field(
                "targets", f"rows run {recipe.id} targets ({_rows_text(pinned)})", f"{target.table}/{target.row}"
            )
    for name, expected, found in (
        ("dataset", recipe.data.dataset, results.dataset),
        ("seed", recipe.training.seed, results.seed),
        ("backbone", recipe.model.backbone, results.backbone),
        ("precision", forward_precision(results.device_type, recipe.training.precision), results.training_precision),
    ):
        if expected != found:
            raise _field(name, f"{expected!r} (its recipe's)", repr(found))


def protocol_metrics(recipe: Recipe) -> list[str]:
    """The names of the numbers every evaluation of ``recipe`` yields (R@K for each K of its protocol, ...)."""
    ks = sorted(set(run_recall_ks(recipe.data.dataset, recipe.evaluation.recall_ks)))
    return [name for metric in recipe.evaluation.metrics for name in METRICS[metric].value_names(ks)]


def _check_values(field: str, metrics: Mapping[str, float]) -> None:
    for name, value in metrics.items():
        if not math.isfinite(value) or not 0.0 <= value <= 100.0:
            raise _field(f"{field}.{name}", "a finite percentage in [0, 100]", value)


def _check_pick(field: str, record: SelectionRecord, pick: dict) -> None:
    rule = f"rule {pick['rule']}"
    if record.iteration != pick["iteration"]:
        raise _field(
            f"{field}.iteration", f"{pick['iteration']} (what evaluations give under {rule})", record.iteration
        )
    for name, value in pick["metrics"].items():
        if record.metrics.get(name) != value:
            raise _field(
                f"{field}.metrics.{name}",
                f"{value!r} (the evaluation at iteration {pick['iteration']}, {rule})",
                record.metrics.get(name, "none"),
            )
    extra = sorted(set(record.metrics) - set(pick["metrics"]))
    if extra:
        raise _field(f"{field}.metrics", f"the metrics of the evaluation at iteration {pick['iteration']}", extra)
    validation = pick.get("validation_metrics")  # a run with a validation split (``data.validation``)
    if record.validation_metrics != validation:
        raise _field(
            f"{field}.validation_metrics",
            f"{validation!r} (the evaluation at iteration {pick['iteration']}, {rule})",
            record.validation_metrics,
        )


def check_numbers(results: ResultsFile, recipe: Recipe) -> None:
    """Every evaluation complete and finite, the run complete, and the selections what the evaluations give."""
    names = protocol_metrics(recipe)
    iterations = [evaluation.iteration for evaluation in results.evaluations]
    for index, evaluation in enumerate(results.evaluations):
        missing = [name for name in names if name not in evaluation.metrics]
        if missing:
            raise _field(
                f"evaluations[{index}].metrics",
                f"every metric of its recipe's protocol ({', '.join(names)})",
                f"none for {', '.join(missing)}",
            )
        _check_values(f"evaluations[{index}].metrics", evaluation.metrics)
    if iterations != sorted(set(iterations)):
        raise _field("evaluations", "one evaluation per iteration, in order", f"iterations {iterations}")
    if recipe.training.iterations and iterations[-1] != recipe.training.iterations:
        raise _field(
            "evaluations",
            f"the last at iteration {recipe.training.iterations} (its recipe's)",
            f"iteration {iterations[-1]}",
        )
    rule = recipe.evaluation.selection
    for field, found in (
        ("selection.rule", results.selection.rule),
        ("evaluation_protocol.selection_rule", results.evaluation_protocol.get("selection_rule")),
    ):
        if found != rule:
            raise _field(field, f"{rule!r} (its recipe's evaluation.selection)", repr(found))
    evaluations = [evaluation.model_dump() for evaluation in results.evaluations]
    _check_values("selection.metrics", results.selection.metrics)
    picks = select_every_rule(evaluations)
    if rule not in picks:  # best_r1 where some evaluation has no R@1
        raise _field(
            "selection.rule",
            "a rule its evaluations can apply (best_r1 needs R@1 in each, best_val_r1 a validation R@1 in each, "
            "best_val_map_r a validation MAP@R in each)",
            repr(rule),
        )
    _check_pick("selection", results.selection, picks[rule])
    for name, record in (results.selections or {}).items():
        if name not in picks:
            raise _field(f"selections.{name}", "no such pick (not every evaluation has R@1)", "one")
        _check_pick(f"selections.{name}", record, picks[name])


def results_problem(results: AnyResults, paper: PublishedPaper, plan: Plan, tier: Tier) -> str | None:
    """Why the gate refuses ``results`` (one line: field, expected, found), or None when it admits it (the index
    aside: :class:`~dml_core.tables.gate.index_check.IndexCheck`; one file a run, readings and seed:
    ``join.read_results_folder``). A linear (anml Table 2) file is checked for its rows only: its schema already
    ties its summary to its splits."""
    try:
        check_rows(results, paper, tier)
        if isinstance(results, ResultsFile):
            check_not_a_rehearsal(results)
            recipe = pinned_recipe(results, plan, tier)
            check_identity(results, recipe)
            check_numbers(results, recipe)
    except _Refused as refusal:
        return str(refusal)
    return None


def admit_results(
    paper: PublishedPaper, plan: Plan, folder: str | Path, *, tier: Tier, data_root: Path | None
) -> Admission:
    """The gate over one paper's results folder. ``data_root``: where to find the prepared datasets whose index
    the deep files must have used (None: not compared, and the notes say so)."""
    loaded, refused = read_results_folder(folder, tier)
    index = IndexCheck(data_root) if data_root is not None else None
    admitted = []
    for item in loaded:
        problem = results_problem(item.results, paper, plan, tier)
        if problem is None and index is not None and isinstance(item.results, ResultsFile):
            problem = index.problem(item.path, item.results)
        if problem is None:
            admitted.append(item)
        else:
            refused.append(Refusal(item.path, problem))
    notes = index.notes() if index is not None else []
    if index is None and any(isinstance(item.results, ResultsFile) for item in admitted):
        notes.append("index hashes not checked: no data root given")
    return Admission(admitted, sorted(refused, key=lambda refusal: refusal.path), notes)
