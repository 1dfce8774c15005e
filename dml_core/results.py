"""The results file: one JSON per run (recipe x seed), with a versioned schema.

It says how every number was obtained: the recipe and its hash, the published rows it targets, git state,
environment, weights, seed, every evaluation, the selection rule next to the selected numbers, the evaluation
protocol and timing. ``load_results`` is the schema check the table builder uses.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, ValidationError

from dml_core.atomic_io import atomic_write_json, read_json_object
from dml_core.errors import InputError

SCHEMA_VERSION = 1


class _Strict(BaseModel):
    model_config = ConfigDict(extra="forbid")


class RecipeRecord(_Strict):
    id: str
    path: str | None
    sha256: str = Field(pattern=r"^[0-9a-f]{64}$")
    overrides: list[str]
    content: dict[str, Any]


class TargetRecord(_Strict):
    table: str
    row: str


class EvaluationRecord(_Strict):
    iteration: int
    epoch: float
    metrics: dict[str, float]
    seconds: float


class SelectionRecord(_Strict):
    rule: Literal["best_r1", "final"]
    iteration: int
    metrics: dict[str, float]


class TimingRecord(_Strict):
    iterations: int
    train_seconds: float  # wall time in the training loop, evaluations excluded
    data_wait_seconds: float
    compute_seconds: float
    iterations_per_second: float
    evaluation_seconds: float
    resumed_runs: int  # how many times the run was resumed; timing covers every segment


class ResultsFile(_Strict):
    schema_version: Literal[1]
    status: Literal["complete"]
    created: str
    recipe: RecipeRecord
    paper: str | None
    targets: list[TargetRecord]
    dataset: str
    backbone: str
    weights: dict[str, Any]
    seed: int
    smoke: bool
    world_size: int = 1
    git: dict[str, Any]
    environment: dict[str, Any]
    evaluation_protocol: dict[str, Any]
    evaluations: list[EvaluationRecord] = Field(min_length=1)
    selection: SelectionRecord
    timing: TimingRecord


def _problems(error: ValidationError) -> str:
    return "; ".join(
        f"field {'.'.join(str(p) for p in item['loc']) or '(top level)'}: {item['msg']}" for item in error.errors()
    )


def validate_results(payload: dict, origin: str) -> ResultsFile:
    try:
        return ResultsFile.model_validate(payload)
    except ValidationError as error:
        raise InputError(f"{origin}: not a valid results file (schema {SCHEMA_VERSION}): {_problems(error)}") from None


def write_results(path: str | Path, payload: dict) -> Path:
    """Validate, then write atomically (a reader never sees half a file)."""
    validate_results(payload, str(path))
    return atomic_write_json(path, payload)


def load_results(path: str | Path) -> ResultsFile:
    path = Path(path)
    payload = read_json_object(path, "results file")
    version = payload.get("schema_version")
    if version != SCHEMA_VERSION:
        raise InputError(f"{path}: field schema_version: expected {SCHEMA_VERSION}, found {version!r}")
    return validate_results(payload, str(path))


def select(evaluations: list[dict], rule: str) -> dict:
    """The evaluation a selection rule picks: the last one, or the one with the best R@1 (earliest on ties)."""
    if rule == "final":
        chosen = evaluations[-1]
    elif rule == "best_r1":
        chosen = max(evaluations, key=lambda record: (record["metrics"]["R@1"], -record["iteration"]))
    else:
        raise ValueError(f"unknown selection rule {rule!r}")
    return {"rule": rule, "iteration": chosen["iteration"], "metrics": dict(chosen["metrics"])}
