"""Every run the recipe files under reproduce/<paper>/ declare: valid under every value of every reading it rests
on, its component parameters accepted, pointing at real published rows, and buildable.

Parametrised over the expanded runs, so a new run (or grid point) is checked the moment it is declared.
"""

import pytest
import torch

from dml_core.published import find_row, load_published
from dml_core.recipes import load_catalog, smoke_version
from dml_core.runner.component_check import component_problems
from dml_core.training.setup import build_run
from dml_core.training.step import train_step

CATALOG = load_catalog()
RUNS = [run for paper in CATALOG.values() for run in paper.runs]


def _name(run) -> str:
    return f"{run.paper}/{run.id}"


def _reading_choices(run) -> list[dict[str, str]]:
    """The default, and each other value of each reading the run rests on (one at a time)."""
    choices = [{}]
    for name in run.reading_names:
        values = run.paper_assumptions.readings[name].values
        choices += [{name: value} for value in values if value != run.default_reading(name)]
    return choices


@pytest.mark.parametrize("run", RUNS, ids=_name)
def test_run_is_valid_under_every_reading_and_targets_published_rows(run):
    published = load_published(run.paper)
    for choices in _reading_choices(run):
        recipe = run.recipe(choices)
        assert recipe.paper == run.paper and recipe.id == run.id
        assert recipe.targets, "a run names the published rows it reproduces"
        for target in recipe.targets:
            find_row(published, target.table, target.row)  # raises with the table/row named when absent
        assert component_problems(recipe) == [], choices
        assert component_problems(smoke_version(recipe)) == [], choices
        assert all(text.strip() for text in recipe.assumptions.values())


def test_every_reading_is_used_by_some_run_and_every_assumption_by_some_run():
    for key, paper in CATALOG.items():
        used_readings = {name for run in paper.runs for name in run.reading_names}
        used_assumptions = {a for run in paper.runs for a in run.recipe().assumptions}
        declared = paper.assumptions
        assert set(declared.readings) <= used_readings, f"{key}: readings no run rests on"
        assert set(declared.assumptions) <= used_assumptions, f"{key}: assumptions no run refers to"


@pytest.fixture(scope="module")
def embedded_root(tmp_path_factory, copy_glyph_sets):
    return copy_glyph_sets(tmp_path_factory.mktemp("data"))


def _one_step(recipe, embedded_root) -> torch.Tensor:
    torch.manual_seed(0)
    parts = build_run(recipe, embedded_root, torch.device("cpu"))  # exactly what the trainer builds
    parts.model.train()
    images, positions = next(iter(parts.batches.epoch(0, 0)))
    labels = torch.as_tensor(parts.dense_labels)[positions]
    return train_step(parts.model, parts.loss, parts.optimizer, parts.scheduler, images, labels, recipe.training)


def _first_of_each_smoke_computation(runs) -> list:
    """One run per distinct smoke computation (its smoke version's content hash): two runs whose smoke versions
    compute the same thing take the same step (127 of 163 runs)."""
    first = {}
    for run in runs:
        first.setdefault(smoke_version(run.recipe()).content_hash(), run)
    return list(first.values())


SMOKE_STEP_RUNS = _first_of_each_smoke_computation(RUNS)


@pytest.mark.slow
@pytest.mark.parametrize("run", SMOKE_STEP_RUNS, ids=_name)
def test_smoke_version_builds_and_takes_a_step(run, embedded_root):
    assert torch.isfinite(_one_step(smoke_version(run.recipe()), embedded_root))


READING_ALTERNATIVES = [
    (run, choices)
    for key, paper in CATALOG.items()
    for name in paper.assumptions.readings
    for run in [next(r for r in paper.runs if name in r.reading_names)]
    for choices in _reading_choices(run)[1:]
    if name in choices
]


@pytest.mark.slow
@pytest.mark.parametrize(
    ("run", "choices"), READING_ALTERNATIVES, ids=[f"{_name(r)}~{c}" for r, c in READING_ALTERNATIVES]
)
def test_each_reading_value_builds_and_takes_a_step(run, choices, embedded_root):
    recipe = smoke_version(run.recipe(choices))
    assert recipe.variant and torch.isfinite(_one_step(recipe, embedded_root))
