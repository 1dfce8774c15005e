"""What the recipe layer plans for a paper, as the table builder needs it: the published rows each run targets
and each run's training schedule. The one place the paper pages and the results gate read a paper's runs (deep runs
through the recipe catalog, linear runs through ``reproduce/<key>/linear/`` plans); the mini pages read its
``mini.yaml`` (``recipes.mini``), the fair page the study's ``study.yaml`` (``recipes.study``)."""

from __future__ import annotations

from collections import defaultdict
from dataclasses import dataclass, field
from pathlib import Path

from dml_core.linear.plan import TABLE2_ID, linear_plan_paths, load_linear_plan, table2_row_id
from dml_core.recipes.catalog import load_paper, recipe_files
from dml_core.recipes.compose import RunDefinition

RowKey = tuple[str, str]  # (table id, row id)


@dataclass(frozen=True)
class Plan:
    """``deep`` and ``linear``: ``(table, row) -> run ids`` targeting it; ``schedules``: a deep run's training
    iterations under its default readings (None when the recipe counts epochs)."""

    deep: dict[RowKey, list[str]] = field(default_factory=dict)
    linear: dict[RowKey, list[str]] = field(default_factory=dict)
    schedules: dict[str, int | None] = field(default_factory=dict)
    assumptions: dict[str, dict[str, str]] = field(default_factory=dict)  # run id -> {assumption id: text}
    readings: dict[str, dict[str, str]] = field(default_factory=dict)  # run id -> {reading: its default value}
    reading_values: dict[str, list[str]] = field(default_factory=dict)  # reading -> its values
    # run id -> its definition: the pinned recipe a deep results file must match (``dml_core.tables.gate.admission``)
    definitions: dict[str, RunDefinition] = field(default_factory=dict)

    def rests_on(self, table: str) -> tuple[dict[str, str], dict[str, str]]:
        """The assumptions (id -> text) and readings (name -> default) of the deep runs targeting ``table``."""
        runs = [run for (table_id, _), ids in self.deep.items() if table_id == table for run in ids]
        assumptions = {i: text for run in runs for i, text in self.assumptions.get(run, {}).items()}
        readings = {name: value for run in runs for name, value in self.readings.get(run, {}).items()}
        return assumptions, readings

    @property
    def targets(self) -> dict[RowKey, list[str]]:
        return {**self.deep, **self.linear}

    @property
    def deep_runs(self) -> set[str]:
        return {run for runs in self.deep.values() for run in runs}

    @property
    def linear_runs(self) -> set[str]:
        return {run for runs in self.linear.values() for run in runs}


def load_plan(recipes_dir: str | Path, key: str) -> Plan:
    """Every deep run of ``<recipes_dir>/<key>/*.yaml`` and linear run of its ``linear/`` plans (none when the
    folder does not exist)."""
    folder = Path(recipes_dir) / key
    deep: dict[RowKey, list[str]] = defaultdict(list)
    schedules: dict[str, int | None] = {}
    assumptions: dict[str, dict[str, str]] = {}
    readings: dict[str, dict[str, str]] = {}
    values: dict[str, list[str]] = {}
    definitions: dict[str, RunDefinition] = {}
    if folder.is_dir() and recipe_files(folder):
        paper = load_paper(key, Path(recipes_dir))
        if paper.assumptions:
            values = {name: list(reading.values) for name, reading in paper.assumptions.readings.items()}
        for run in paper.runs:
            recipe = run.recipe()
            definitions[run.id] = run
            schedules[recipe.id] = recipe.training.iterations
            assumptions[recipe.id] = dict(recipe.assumptions)
            readings[recipe.id] = dict(recipe.readings)
            for target in recipe.targets:
                deep[(target.table, target.row)].append(recipe.id)
    linear = planned_linear_targets(recipes_dir, key)
    return Plan(dict(deep), linear, schedules, assumptions, readings, values, definitions)


def planned_linear_targets(recipes_dir: str | Path, key: str) -> dict[RowKey, list[str]]:
    """``(table2, row) -> [row]`` for every method of every plan under ``<recipes_dir>/<key>/linear/``: a
    linear run's id is the id of the Table 2 row it reproduces."""
    planned: dict[RowKey, list[str]] = {}
    for path in linear_plan_paths(recipes_dir, key):
        plan = load_linear_plan(path)
        for method in plan.methods:
            row = table2_row_id(method, plan.dataset)
            planned[(TABLE2_ID, row)] = [row]
    return planned
