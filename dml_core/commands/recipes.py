"""``dml recipes``: the suite's runs as the recipe files declare them, expanded.

``list [--paper KEY]``: every run with the published rows it targets; ``show RUN [--reading N=V] [--smoke | --mini]``:
one run fully expanded as a recipe file of its own (what trains, what is hashed and recorded; ``dml train FILE`` trains
it to the same content hash); ``readings KEY``: a paper's open choices, their values and defaults.
"""

from __future__ import annotations

import argparse
from collections.abc import Mapping

import yaml

from dml_core.command_line import DML
from dml_core.commands.options import add_reading_option, add_tier_flags, chosen_tier
from dml_core.output_paths import recorded_path
from dml_core.recipes import (
    PaperRecipes,
    check_reading_choices,
    load_catalog,
    load_paper,
    parse_reading_choices,
    resolve_run,
)
from dml_core.recipes.assumptions import ASSUMPTIONS_FILE, SHARED_READINGS_FILE, Reading
from dml_core.recipes.compose import RunDefinition, extends_chain
from dml_core.recipes.resolve import resolve
from dml_core.tier import Tier
from dml_core.vocabulary import RECIPE_KEYS


def add_parser(subparsers) -> None:
    parser = subparsers.add_parser(
        "recipes",
        description="The runs that reproduce/<paper>/*.yaml declare (bases extended, grids expanded), the published "
        "rows each targets, and the readings (named open choices) they rest on.",
    )
    actions = parser.add_subparsers(dest="action", required=True, metavar="ACTION")
    listing = actions.add_parser("list", help="every run (id, targets, readings)")
    listing.add_argument("--paper", help="only this paper's runs (or a study's: fair)")
    show = actions.add_parser("show", help=f"one run, fully expanded, as a recipe file `{DML} train FILE` takes")
    show.add_argument("reference", metavar="RUN", help="run id (PAPER/ID where two papers share it) or recipe file")
    add_reading_option(show, "show the run under another value of a reading it rests on (repeatable)")
    add_tier_flags(
        show, smoke_help="the smoke version `--smoke` would train", mini_help="the mini version `--mini` would train"
    )
    readings = actions.add_parser("readings", help="a paper's readings: question, values, default, why")
    readings.add_argument("paper")
    parser.set_defaults(run=run)


def run(args: argparse.Namespace) -> int:
    if args.action == "list":
        print(list_runs(args.paper))
    elif args.action == "show":
        print(show_run(args.reference, args.readings, chosen_tier(args)))
    else:
        print(list_readings(args.paper))
    return 0


def list_runs(paper: str | None) -> str:
    """One line per run: ``id  ->  targets  on dataset  [readings]  (file)``, under each recipe folder's name."""
    papers = [paper] if paper else RECIPE_KEYS
    lines = []
    for key, recipes in load_catalog(papers=papers).items():
        shared = [name for name, reading in _readings_of(recipes).items() if reading.shared]
        every_run = f"; every run rests on the shared readings {', '.join(shared)}" if shared else ""
        lines.append(f"{key} ({len(recipes.runs)} runs){every_run}")
        for run in recipes.runs:
            targets = ", ".join(t if isinstance(t, str) else f"{t['table']}/{t['row']}" for t in run.targets)
            own = [name for name in run.reading_names if name not in shared]
            readings = f"  [readings: {', '.join(own)}]" if own else ""
            targets = targets or "no published row (a study's run)"
            dataset = run.recipe().data.dataset
            lines.append(f"  {run.id}  ->  {targets}  on {dataset}{readings}  ({run.file.name})")
    return "\n".join(lines)


def show_run(reference: str, reading_texts: list[str], tier: Tier = Tier.FULL) -> str:
    """The run's recipe as a recipe file of its own (``dml train FILE`` trains it to the same content hash)."""
    run = resolve_run(reference)
    choices = parse_reading_choices(reading_texts)
    check_reading_choices([run], choices, what=f"run {run.id}")
    return recipe_file_text(run, choices, tier)


def recipe_file_text(run: RunDefinition, choices: Mapping[str, str], tier: Tier = Tier.FULL) -> str:
    """``run`` under ``choices`` as a recipe file that stands alone: every setting resolved (no ``extends``), its
    assumptions as ``{id: sentence}``, the readings as the values applied (``{name: value}``), and a header that
    says where it was declared, which readings were applied and its content hash."""
    recipe = resolve(run, choices, tier=tier)
    files = " <- ".join(recorded_path(path) for path, _ in reversed(extends_chain(run.file)))
    applied = [
        f"{name}={value}{' (default)' if value == run.default_reading(name) else ''}"
        for name, value in recipe.readings.items()
    ]
    header = [
        f"# run {run.paper}/{recipe.run_name}{'' if tier is Tier.FULL else f' ({tier} version)'}",
        f"# declared in {files}",
        f"# readings applied: {', '.join(applied) or 'none'}",
        f"# (their settings are in the file; `{DML} recipes readings {run.paper}` explains them)",
        f"# content hash {recipe.content_hash()} (what changes the numbers; prose and targets are not hashed)",
        f"# a recipe file of its own: `{DML} train FILE` trains it (kept outside reproduce/<paper>/)",
    ]
    tree = recipe.model_dump(mode="json")
    tree["targets"] = [f"{target['table']}/{target['row']}" for target in tree["targets"]]
    return "\n".join(header) + "\n" + yaml.safe_dump(tree, sort_keys=False, width=116)


def list_readings(paper: str) -> str:
    """Each reading of ``paper``: its question, values (the default marked), why, and how many runs rest on it."""
    recipes = load_paper(paper)
    readings = _readings_of(recipes)
    if not readings:
        return f"{paper}: no readings"
    lines = []
    for name, reading in readings.items():
        using = sum(1 for run in recipes.runs if name in run.reading_names)
        lines.append(f"{name}  ({using} runs rest on it; run another value with --reading {name}=VALUE)")
        if reading.shared:
            own = name in recipes.assumptions.shared_readings
            lines.append(
                f"  shared by every paper (reproduce/{SHARED_READINGS_FILE})"
                + (f"; {paper}'s own default (reproduce/{paper}/{ASSUMPTIONS_FILE})" if own else "")
            )
        lines.append(f"  question: {reading.question.strip()}")
        for value, meaning in reading.values.items():
            mark = " (default)" if value == reading.default else ""
            lines.append(f"  {value}{mark}: {meaning.strip()}")
        lines.append(f"  why the default: {reading.why.strip()}")
    return "\n".join(lines)


def _readings_of(recipes: PaperRecipes) -> dict[str, Reading]:
    return recipes.assumptions.readings if recipes.assumptions else {}
