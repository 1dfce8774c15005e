"""Pinned settings of anml Table 2 runs: ``reproduce/<key>/linear/<id>.yaml``, one file per data set.

A plan names a data set, the methods to run on it and the protocol settings (splits, base seed, K rule, grid
thinning, CV folds, solver budget), plus a ``smoke:`` block that shrinks it to seconds. Each (plan, method)
is one run that writes one results file of kind ``linear`` (``dml_core.results``), named after the published
Table 2 row it reproduces. Plans live in a sub-folder so that the deep recipe loader, which reads
``reproduce/<key>/*.yaml``, never sees them.
"""

from __future__ import annotations

import hashlib
import json
from dataclasses import asdict
from pathlib import Path
from typing import Literal

from pydantic import Field, field_validator

from dml_core.errors import InputError
from dml_core.linear.grids import N_FOLDS, PAPER_GRIDS, thin_grid
from dml_core.linear.solver_config import SolverConfig
from dml_core.linear.uci import UCI_DATASETS, get_uci_dataset, uci_key
from dml_core.registry import Registry
from dml_core.schema import StrictModel, load_yaml_model
from dml_core.tier import Tier
from dml_core.vocabulary import PaperKey

LINEAR_PLANS_FOLDER = "linear"

# The methods Table 2 prints and we run, with the slug of their published row ids (``dml_core.published``).
# Euclidean kNN is not a Table 2 column, so it has no row to reproduce.
TABLE2_ROW_SLUGS: Registry[str] = Registry(
    "Table 2 method",
    "methods",
    {"nca": "nca", "pnca": "pnca", "lanml_plus": "lanml-plus", "lanml_minus": "lanml-minus"},
)

TABLE2_ID = "table2"


def table2_row_id(method: str, dataset: str) -> str:
    """The published Table 2 row a method's run on a data set reproduces.

    >>> table2_row_id("lanml_minus", "Iris")
    'lanml-minus-uci-iris'
    """
    return f"{TABLE2_ROW_SLUGS.lookup(method, field='method')}-uci-{get_uci_dataset(dataset).name.lower()}"


class LinearSmoke(StrictModel):
    """What the smoke version changes: few splits, a grid thinned to (about) one point, a short solver budget."""

    splits: int = Field(default=2, ge=1)
    grid_every: int = Field(default=100, ge=1)
    max_iterations: int = Field(default=30, ge=1)


class LinearPlan(StrictModel):
    id: str
    paper: PaperKey
    dataset: str
    methods: list[str] = Field(min_length=1)
    splits: int = Field(default=30, ge=1)
    seed: int = 0
    k_rule: Literal["test", "cv"] = "test"
    grid_every: int = Field(default=1, ge=1)
    cv_folds: int = Field(default=N_FOLDS, ge=2)
    max_iterations: int = Field(default=SolverConfig.max_iterations, ge=1)
    smoke: LinearSmoke = LinearSmoke()
    assumptions: list[str] = Field(default_factory=list)

    @field_validator("dataset")
    @classmethod
    def _known_dataset(cls, value: str) -> str:
        if uci_key(value) not in UCI_DATASETS:  # pydantic's message names the field
            raise ValueError(UCI_DATASETS.unknown(value))
        return get_uci_dataset(value).name

    @field_validator("methods")
    @classmethod
    def _table2_methods(cls, value: list[str]) -> list[str]:
        unknown = [method for method in value if method not in TABLE2_ROW_SLUGS]
        if unknown:
            raise ValueError("; ".join(TABLE2_ROW_SLUGS.unknown(method) for method in unknown))
        return value


def linear_plan_paths(recipes_dir: str | Path, key: str) -> list[Path]:
    """``<recipes_dir>/<key>/linear/*.yaml``, sorted (none when the folder does not exist)."""
    return sorted((Path(recipes_dir) / key / LINEAR_PLANS_FOLDER).glob("*.yaml"))


def load_linear_plan(path: str | Path) -> LinearPlan:
    """Read and validate a plan; its ``id`` must be its file stem and its ``paper`` its paper folder."""
    path = Path(path)
    plan = load_yaml_model(path, LinearPlan, "linear plan")
    if plan.id != path.stem:
        raise InputError(f"{path}: field id: expected the file stem {path.stem!r}, found {plan.id!r}")
    folder = path.parent.parent.name
    if plan.paper != folder:
        raise InputError(f"{path}: field paper: expected {folder!r} (its folder), found {plan.paper!r}")
    return plan


def smoke_plan(plan: LinearPlan) -> LinearPlan:
    """The plan with its ``smoke:`` settings applied."""
    return plan.model_copy(update=plan.smoke.model_dump())


def run_settings(plan: LinearPlan, method: str, tier: Tier) -> dict:
    """Everything that decides one method's numbers under a (resolved) plan; its hash identifies the run."""
    return {
        "dataset": plan.dataset,
        "method": method,
        "splits": plan.splits,
        "seed": plan.seed,
        "k_rule": plan.k_rule,
        "grid_every": plan.grid_every,
        "grid": {name: list(values) for name, values in thin_grid(PAPER_GRIDS[method], plan.grid_every).items()},
        "cv_folds": plan.cv_folds,
        "solver": asdict(SolverConfig(max_iterations=plan.max_iterations)),
        "smoke": tier == Tier.SMOKE,
    }


def settings_hash(settings: dict) -> str:
    """sha256 of the settings as canonical JSON.

    >>> settings_hash({"b": 1, "a": [2.0]}) == settings_hash({"a": [2.0], "b": 1})
    True
    """
    return hashlib.sha256(json.dumps(settings, sort_keys=True, separators=(",", ":")).encode()).hexdigest()
