"""What the recipe layer plans for a paper, as the table builder needs it: the published rows each run targets
and each run's training schedule. The one place the tables read ``reproduce/<key>/`` (deep runs through the
recipe catalog, linear runs through ``reproduce/<key>/linear/`` plans)."""

from __future__ import annotations

from collections import defaultdict
from dataclasses import dataclass, field
from pathlib import Path

from dml_core.linear.plan import TABLE2_ID, linear_plan_paths, load_linear_plan, table2_row_id
from dml_core.recipes.catalog import load_paper

RowKey = tuple[str, str]  # (table id, row id)


@dataclass(frozen=True)
class Plan:
    """``deep`` and ``linear``: ``(table, row) -> run ids`` targeting it; ``schedules``: a deep run's training
    iterations under its default readings (None when the recipe counts epochs)."""

    deep: dict[RowKey, list[str]] = field(default_factory=dict)
    linear: dict[RowKey, list[str]] = field(default_factory=dict)
    schedules: dict[str, int | None] = field(default_factory=dict)

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
    if folder.is_dir():
        for run in load_paper(key, Path(recipes_dir)).runs:
            recipe = run.recipe()
            schedules[recipe.id] = recipe.training.iterations
            for target in recipe.targets:
                deep[(target.table, target.row)].append(recipe.id)
    return Plan(dict(deep), planned_linear_targets(recipes_dir, key), schedules)


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
