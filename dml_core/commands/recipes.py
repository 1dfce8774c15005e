"""``dml recipes``: the suite's runs as the recipe files declare them, expanded.

``list [--paper KEY]``: every run with the published rows it targets; ``show RUN [--reading N=V] [--smoke]``: one run
fully expanded (what trains, what is hashed and recorded); ``readings KEY``: a paper's open choices, their values
and defaults.
"""

from __future__ import annotations

import argparse

import yaml

from dml_core.commands.options import add_reading_option
from dml_core.output_paths import recorded_path
from dml_core.recipes import (
    PAPERS,
    check_reading_choices,
    load_catalog,
    load_paper,
    parse_reading_choices,
    resolve_run,
    smoke_version,
)
from dml_core.recipes.compose import extends_chain


def add_parser(subparsers) -> None:
    parser = subparsers.add_parser(
        "recipes",
        description="The runs that reproduce/<paper>/*.yaml declare (bases extended, grids expanded), the published "
        "rows each targets, and the readings (named open choices) they rest on.",
    )
    actions = parser.add_subparsers(dest="action", required=True, metavar="ACTION")
    listing = actions.add_parser("list", help="every run (id, targets, readings)")
    listing.add_argument("--paper", help="only this paper's runs")
    show = actions.add_parser("show", help="one run, fully expanded, as YAML")
    show.add_argument("reference", metavar="RUN", help="run id (PAPER/ID where two papers share it) or recipe file")
    add_reading_option(show, "show the run under another value of a reading it rests on (repeatable)")
    show.add_argument("--smoke", action="store_true", help="the smoke version `--smoke` would train")
    readings = actions.add_parser("readings", help="a paper's readings: question, values, default, why")
    readings.add_argument("paper")
    parser.set_defaults(run=run)


def run(args: argparse.Namespace) -> int:
    if args.action == "list":
        print(list_runs(args.paper))
    elif args.action == "show":
        print(show_run(args.reference, args.readings, args.smoke))
    else:
        print(list_readings(args.paper))
    return 0


def list_runs(paper: str | None) -> str:
    """One line per run: ``paper/id  targets  [readings]``."""
    papers = [paper] if paper else PAPERS
    lines = []
    for key, recipes in load_catalog(papers=papers).items():
        lines.append(f"{key} ({len(recipes.runs)} runs)")
        for run in recipes.runs:
            targets = ", ".join(t if isinstance(t, str) else f"{t['table']}/{t['row']}" for t in run.targets)
            readings = f"  [readings: {', '.join(run.reading_names)}]" if run.reading_names else ""
            lines.append(f"  {run.id}  ->  {targets}{readings}  ({run.file.name})")
    return "\n".join(lines)


def show_run(reference: str, reading_texts: list[str], smoke: bool) -> str:
    """The run's recipe as YAML, with its content hash and the files it came from."""
    run = resolve_run(reference)
    choices = parse_reading_choices(reading_texts)
    check_reading_choices([run], choices, what=f"run {run.id}")
    recipe = run.recipe(choices)
    if smoke:
        recipe = smoke_version(recipe)
    files = " <- ".join(recorded_path(path) for path, _ in reversed(extends_chain(run.file)))
    header = [
        f"# run {run.paper}/{recipe.run_name}{' (smoke version)' if smoke else ''}",
        f"# declared in {files}",
        f"# content hash {recipe.content_hash()} (what changes the numbers; prose and targets are not hashed)",
    ]
    return "\n".join(header) + "\n" + yaml.safe_dump(recipe.model_dump(mode="json"), sort_keys=False, width=116)


def list_readings(paper: str) -> str:
    """Each reading of ``paper``: its question, values (the default marked), why, and how many runs rest on it."""
    recipes = load_paper(paper)
    if recipes.assumptions is None or not recipes.assumptions.readings:
        return f"{paper}: no readings"
    lines = []
    for name, reading in recipes.assumptions.readings.items():
        using = sum(1 for run in recipes.runs if name in run.reading_names)
        lines.append(f"{name}  ({using} runs rest on it; run another value with --reading {name}=VALUE)")
        lines.append(f"  question: {reading.question.strip()}")
        for value, meaning in reading.values.items():
            mark = " (default)" if value == reading.default else ""
            lines.append(f"  {value}{mark}: {meaning.strip()}")
        lines.append(f"  why the default: {reading.why.strip()}")
    return "\n".join(lines)
