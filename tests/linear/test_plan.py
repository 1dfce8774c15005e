"""Pinned linear plans (reproduce/<key>/linear/*.yaml): the repository's plans are valid and target real
Table 2 rows; malformed plans are refused naming file and field; the settings hash tells runs apart."""

from pathlib import Path

import pytest
import yaml

from dml_core.errors import InputError
from dml_core.linear.plan import (
    linear_plan_paths,
    load_linear_plan,
    run_settings,
    settings_hash,
    smoke_plan,
    table2_row_id,
)
from dml_core.output_paths import RECIPES_DIR
from dml_core.published import find_row, load_published
from dml_core.tier import Tier

PINNED = linear_plan_paths(RECIPES_DIR, "anml")
IRIS = next(path for path in PINNED if path.stem == "table2-iris")
THINNED = ["table2-german-thinned", "table2-vehicle-thinned"]  # the paper's grid costs days here


def test_the_pinned_plans_are_the_papers_protocol_or_a_thinned_grid_and_target_table2_rows():
    names = [path.stem for path in PINNED]
    assert names == [
        "table2-german-thinned", "table2-german", "table2-glass", "table2-iris", "table2-letter", "table2-monk1",
        "table2-pendigits", "table2-vehicle-thinned", "table2-vehicle", "table2-wine",
    ]  # fmt: skip
    published = load_published("anml")
    rows = []
    for path in PINNED:
        plan = load_linear_plan(path)
        grid_every = 3 if path.stem in THINNED else 1
        assert (plan.splits, plan.cv_folds, plan.grid_every, plan.k_rule) == (30, 5, grid_every, "test")
        rows += [table2_row_id(method, plan.dataset) for method in plan.methods]
        for method in plan.methods:
            find_row(published, "table2", table2_row_id(method, plan.dataset))  # raises when the row is absent
    assert len(rows) == len(set(rows))  # one plan per row: no two plans write the same results file


def test_the_smoke_version_is_small():
    plan = smoke_plan(load_linear_plan(IRIS))
    assert (plan.splits, plan.grid_every, plan.max_iterations) == (2, 100, 30)
    assert run_settings(plan, "lanml_plus", tier=Tier.SMOKE)["grid"] == {
        "lam": [0.1],
        "gamma1": [2**-5],
        "gamma2": [2**-5],
    }


def test_the_settings_hash_changes_with_anything_that_changes_the_numbers():
    plan = load_linear_plan(IRIS)
    base = settings_hash(run_settings(plan, "pnca", tier=Tier.FULL))
    assert base == settings_hash(run_settings(load_linear_plan(IRIS), "pnca", tier=Tier.FULL))
    for changed in (plan.model_copy(update={"grid_every": 5}), plan.model_copy(update={"seed": 1})):
        assert settings_hash(run_settings(changed, "pnca", tier=Tier.FULL)) != base
    assert settings_hash(run_settings(plan, "pnca", tier=Tier.SMOKE)) != base
    assert settings_hash(run_settings(plan, "nca", tier=Tier.FULL)) != base


def _write(tmp_path: Path, name: str = "table2-iris", **changes) -> Path:
    tree = {**yaml.safe_load(IRIS.read_text()), **changes}
    path = tmp_path / "anml" / "linear" / f"{name}.yaml"
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(yaml.safe_dump(tree))
    return path


@pytest.mark.parametrize(
    ("name", "changes", "message"),
    [
        ("other", {}, "field id: expected the file stem 'other', found 'table2-iris'"),
        ("table2-iris", {"paper": "gpw"}, "field paper: expected 'anml' (its folder), found 'gpw'"),
        (
            "table2-iris",
            {"methods": ["lmnn"]},
            "field methods: unknown Table 2 method 'lmnn'; expected one of lanml_minus, lanml_plus, ",
        ),
        (
            "table2-iris",
            {"dataset": "Mnist"},
            "field dataset: unknown UCI data set 'Mnist'; expected one of Australian, Cars, ",
        ),
        ("table2-iris", {"grid_every": 0}, "field grid_every: Input should be greater than or equal to 1"),
        ("table2-iris", {"grid": [1]}, "field grid: Extra inputs are not permitted"),
    ],
)
def test_a_malformed_plan_is_refused_naming_file_and_field(tmp_path, name, changes, message):
    path = _write(tmp_path, name, **changes)
    with pytest.raises(InputError) as error:
        load_linear_plan(path)
    assert str(path) in str(error.value) and message in str(error.value)
