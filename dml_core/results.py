"""The results file: one JSON per run, with a versioned schema, in two kinds: ``deep`` (one run of a deep recipe x
seed, ``ResultsFile``) and ``linear`` (one linear method on one data set under anml's Table 2 protocol,
``LinearResultsFile``).

A results file says how every number in it was obtained.
``load_results`` is the schema check the table builder uses; both kinds are strict (unknown fields rejected).
"""

from __future__ import annotations

import datetime as dt
from pathlib import Path
from typing import Annotated, Any, Literal

from pydantic import Field, ValidationError, model_validator

from dml_core.atomic_io import atomic_write_json, read_json_object
from dml_core.errors import InputError
from dml_core.recipes.settings import Precision, forward_precision
from dml_core.schema import StrictModel, format_validation_error
from dml_core.tier import Tier

SCHEMA_VERSION = 1


class TierRecorded(StrictModel):
    """The run's tier, ``tier`` in files written since it existed; older files recorded it as two booleans,
    ``smoke`` and ``mini`` (absent: false), which still load."""

    tier: Tier = Tier.FULL

    @model_validator(mode="before")
    @classmethod
    def _tier_from_booleans(cls, value: Any) -> Any:
        if not isinstance(value, dict) or ("smoke" not in value and "mini" not in value):
            return value
        if "tier" in value:
            raise ValueError("tier: given with the older smoke/mini fields; expected one of them")
        tree = dict(value)
        smoke, mini = tree.pop("smoke", False), tree.pop("mini", False)
        if not isinstance(smoke, bool) or not isinstance(mini, bool):
            raise ValueError(f"smoke, mini: expected true or false, found {smoke!r}, {mini!r}")
        if smoke and mini:
            raise ValueError("smoke and mini: a run belongs to one tier")
        return {**tree, "tier": Tier.from_flags(smoke, mini)}

    @property
    def smoke(self) -> bool:
        return self.tier == Tier.SMOKE

    @property
    def mini(self) -> bool:
        return self.tier == Tier.MINI


class RecipeRecord(StrictModel):
    id: str
    path: str | None
    sha256: str = Field(pattern=r"^[0-9a-f]{64}$")
    overrides: list[str]
    content: dict[str, Any]


class TargetRecord(StrictModel):
    table: str
    row: str


class EvaluationRecord(StrictModel):
    iteration: int
    epoch: float
    metrics: dict[str, float]  # on the test split
    seconds: float
    # the same metrics on the validation split (``data.validation``); absent without one, and in older files
    validation_metrics: dict[str, float] | None = None


SELECTION_RULES = ("best_r1", "final", "best_val_r1", "best_val_map_r")
SelectionRule = Literal["best_r1", "final", "best_val_r1", "best_val_map_r"]


class SelectionRecord(StrictModel):
    rule: SelectionRule
    iteration: int
    metrics: dict[str, float]  # the picked evaluation's test metrics, whatever the rule read
    validation_metrics: dict[str, float] | None = None  # its validation metrics, where it has them


class QueryTermsRecord(StrictModel):
    """The companion file of per-query retrieval terms beside the results file (``dml_core.query_terms_file``):
    its name (in the same folder), sha256, size, and the evaluations it holds (by iteration)."""

    file: str = Field(pattern=r"^[^/\\]+\.queries\.npz$")
    sha256: str = Field(pattern=r"^[0-9a-f]{64}$")
    bytes: int = Field(ge=0)
    iterations: list[int] = Field(min_length=1)


class HostLoadRecord(StrictModel):
    """The host's 1-minute load average while the run trained (``dml_core.host_load``): its CPUs and the samples'
    count, mean and maximum, as sampled and over each sample's host's CPUs (a resumed run may have moved to a host
    with another CPU count: ``cpus`` is the last host's, ``other_cpus`` the earlier ones')."""

    cpus: int = Field(ge=1)
    samples: int = Field(ge=1)
    mean: float = Field(ge=0)
    max: float = Field(ge=0)
    mean_per_cpu: float | None = Field(default=None, ge=0)  # None: written before it was recorded (one host)
    max_per_cpu: float | None = Field(default=None, ge=0)
    other_cpus: list[int] = Field(default_factory=list)

    @property
    def load_per_cpu(self) -> float:
        """The mean load per CPU (from ``mean`` and ``cpus`` in files written before the per-CPU mean)."""
        return self.mean / self.cpus if self.mean_per_cpu is None else self.mean_per_cpu


class SamplerRecord(StrictModel):
    """What decided the run's batches beside its training split (``index_hashes["train"]``): the sampler's name and
    seed, every parameter of its constructor with the defaults filled in, and what it derived from them and the
    labels (``dml_core.data.samplers.sampler_record``: damlrrm's shuffled pool)."""

    name: str
    seed: int
    settings: dict[str, Any]
    derived: dict[str, Any] = Field(default_factory=dict)


class TimingRecord(StrictModel):
    iterations: int
    train_seconds: float  # wall time in the training loop, evaluations excluded
    data_wait_seconds: float
    compute_seconds: float
    iterations_per_second: float
    evaluation_seconds: float
    resumed_runs: int  # how many times the run was resumed; timing covers every segment
    host_load: HostLoadRecord | None = None  # None: files written before it was recorded, or no load average


class RehearsalRecord(StrictModel):
    """A full-scale run cut short (``--max-steps``) to rehearse the path to its first steps: its numbers stand for
    no row of any table, and the results gate refuses the file."""

    max_steps: int = Field(ge=1)
    recipe_iterations: int = Field(ge=1)  # what its recipe trains


class ResultsFile(TierRecorded):
    """A deep run (recipe x seed): the recipe and its hash, the published rows it targets, git state, environment,
    weights, seed, every evaluation, the selection rule next to the selected numbers and what every rule picks, the
    precision the model trained in, the evaluation protocol and timing."""

    schema_version: Literal[1]
    kind: Literal["deep"] = "deep"  # absent in files written before linear results existed
    status: Literal["complete"]
    created: str
    recipe: RecipeRecord
    paper: str | None
    targets: list[TargetRecord]
    dataset: str
    backbone: str
    backbone_width: float = 1.0  # channel-width multiplier (the mini tier narrows the backbone); older files: 1
    weights: dict[str, Any]
    seed: int
    world_size: int = 1
    # the precision of the model's training forward (``recipe.forward_precision``; losses and test embeddings are
    # fp32 whatever it is); absent in files written before it was recorded: ``training_precision`` reads it then
    precision: Precision | None = None
    # which images the run trained and tested on: sha256 of each split's sorted paths, and "all"
    # (``dml_core.data.index.index_hashes``; absent in files written before it was recorded)
    index_hashes: dict[str, Annotated[str, Field(pattern=r"^[0-9a-f]{64}$")]] | None = None
    # the sampler as built (absent in files written before it was recorded: their recipe names its parameters,
    # not the defaults it ran with)
    sampler: SamplerRecord | None = None
    git: dict[str, Any]
    environment: dict[str, Any]
    evaluation_protocol: dict[str, Any]
    evaluations: list[EvaluationRecord] = Field(min_length=1)
    selection: SelectionRecord  # the recipe's rule
    # every rule's pick, by rule (absent in files written before it existed; best_r1 absent without R@1)
    selections: dict[SelectionRule, SelectionRecord] | None = None
    # per-query retrieval terms of the picked evaluations, beside this file (absent in older files, or without
    # retrieval metrics)
    queries: QueryTermsRecord | None = None
    timing: TimingRecord
    rehearsal: RehearsalRecord | None = None  # absent: the run trained as long as its recipe says

    @model_validator(mode="after")
    def _selections_agree(self) -> ResultsFile:
        for rule, record in (self.selections or {}).items():
            if record.rule != rule:
                raise ValueError(f"selections.{rule}: expected rule {rule!r}, found {record.rule!r}")
        if self.selections and self.selections.get(self.selection.rule, self.selection) != self.selection:
            raise ValueError(f"selections.{self.selection.rule}: differs from selection (the recipe's rule)")
        return self

    @model_validator(mode="after")
    def _queries_name_evaluations(self) -> ResultsFile:
        evaluated = {record.iteration for record in self.evaluations}
        stray = sorted(set(self.queries.iterations) - evaluated) if self.queries else []
        if stray:
            raise ValueError(f"queries.iterations: expected iterations of evaluations, found {stray}")
        return self

    @property
    def run_id(self) -> str:
        """The id the table builder groups seeds by: the recipe's."""
        return self.recipe.id

    def metric_samples(self, metric: str) -> list[float]:
        """The run's measured values of ``metric``: its selected number (none when not evaluated)."""
        return [self.selection.metrics[metric]] if metric in self.selection.metrics else []

    @property
    def training_precision(self) -> Precision:
        """The recorded precision, or for a file written before it was recorded what that run did: its recipe's
        ``training.precision`` on CUDA, fp32 otherwise."""
        if self.precision is not None:
            return self.precision
        training = self.recipe.content.get("training", {})
        if "precision" in training:
            return forward_precision(self.device_type, training["precision"])
        # A recipe recorded before ``training.precision`` sets the flag it replaced, ``bf16``, whose default was true
        # then: a recipe that does not set it trained in bf16 on CUDA.
        return forward_precision(self.device_type, "bf16" if training.get("bf16", True) else "fp32")

    @property
    def device_type(self) -> str:
        """The kind of device the run trained on ("cuda", "cpu"), from ``environment.device`` ("cuda:0")."""
        return str(self.environment.get("device", "cpu")).split(":")[0]

    @property
    def untrained(self) -> EvaluationRecord | None:
        """The evaluation before the first update (``training.evaluate_at_start``), if the run made one."""
        first = self.evaluations[0]
        return first if first.iteration == 0 else None

    def final_samples(self, metric: str) -> list[float]:
        """``metric`` at the run's last evaluation (the ``final`` rule, shown beside the papers' best-test pick)."""
        final = (self.selections or {}).get("final")
        metrics = final.metrics if final is not None else self.evaluations[-1].metrics
        return [metrics[metric]] if metric in metrics else []


class LinearPlanRecord(StrictModel):
    """The pinned settings a linear run came from (``path`` None: an ad-hoc ``dml linear-table2`` run)."""

    id: str
    path: str | None
    sha256: str = Field(pattern=r"^[0-9a-f]{64}$")  # of the resolved settings of this method's run
    overrides: list[str]
    # True: ``path`` was rewritten after the run from the absolute path of the checkout that ran it to the
    # repository's plan file with the same settings hash (``dml_core.linear.relocate``)
    path_relocated: bool = False


class LinearProtocolRecord(StrictModel):
    """How anml's Table 2 numbers were obtained (section 7.1); see ``dml_core.linear.protocol``."""

    name: Literal["anml-table2"]
    splits: int = Field(ge=1)  # random stratified train/test splits; split s is seeded seed + s
    seed: int
    test_fraction: float = Field(gt=0, lt=1)
    cv_folds: int = Field(ge=2)
    max_k: int = Field(ge=1)
    k_rule: Literal["test", "cv"]  # test: the best K on the test part (as the paper reports); cv: CV-chosen K
    grid: dict[str, list[float]]  # the grid actually searched
    grid_every: int = Field(ge=1)  # 1: every value of the paper's grid; N: every N-th value
    paper_grid: bool  # grid == the paper's grid for this method
    pca_dimensions: int | None
    preprocessing: str
    solver: dict[str, Any]
    n_samples: int = Field(ge=1)
    n_features: int = Field(ge=1)


class LinearSplitRecord(StrictModel):
    split: int = Field(ge=0)
    seed: int
    hyper_parameters: dict[str, float]
    cv_accuracy: float = Field(ge=0, le=1)
    cv_k: int = Field(ge=1)
    best_test_k: int = Field(ge=1)
    test_accuracy_by_k: list[float] = Field(min_length=1)  # index K-1, in [0, 1]
    accuracy: float = Field(ge=0, le=100)  # percent, under the protocol's k_rule
    seconds: float = Field(ge=0)


class LinearSummaryRecord(StrictModel):
    accuracy: float = Field(ge=0, le=100)  # percent, mean over splits
    accuracy_std: float = Field(ge=0)  # percent, sample std (ddof=1) over splits; 0 for one split


class LinearResultsFile(TierRecorded):
    """One linear method on one data set under the Table 2 protocol, one base seed: the protocol settings (splits, CV
    folds, the grid and how it was thinned, the K rule, the solver), the plan and its hash, every split's accuracy,
    the mean and std over splits, seconds, git state and environment."""

    schema_version: Literal[1]
    kind: Literal["linear"]
    status: Literal["complete"]
    created: str
    id: str  # the run id: the published Table 2 row it reproduces, e.g. lanml-plus-uci-iris
    plan: LinearPlanRecord
    paper: str
    targets: list[TargetRecord] = Field(min_length=1)
    dataset: str  # as published.yaml names it: uci:iris
    # what the arrays were read from, with its checksums (``linear.uci.uci_source``); None: not recorded then
    data_source: str | None = None
    method: str  # dml_core.linear.methods key: lanml_plus
    method_name: str  # as Table 2 prints it: LANML+
    seed: int
    git: dict[str, Any]
    environment: dict[str, Any]
    protocol: LinearProtocolRecord
    splits: list[LinearSplitRecord] = Field(min_length=1)
    summary: LinearSummaryRecord
    seconds: float = Field(ge=0)

    @model_validator(mode="after")
    def _consistent(self) -> LinearResultsFile:
        if len(self.splits) != self.protocol.splits:
            raise ValueError(f"splits: expected {self.protocol.splits} (protocol.splits), found {len(self.splits)}")
        mean = sum(s.accuracy for s in self.splits) / len(self.splits)
        if abs(mean - self.summary.accuracy) > 1e-6:
            raise ValueError(
                f"summary.accuracy: expected the mean of the splits' accuracies {mean:.6f}, "
                f"found {self.summary.accuracy}"
            )
        return self

    @property
    def run_id(self) -> str:
        return self.id

    def metric_samples(self, metric: str) -> list[float]:
        """Per-split accuracies (percent) for ``accuracy``: the table pools them into mean ± std over splits."""
        return [s.accuracy for s in self.splits] if metric == "accuracy" else []

    def final_samples(self, metric: str) -> list[float]:
        """None: a linear run has no training curve to take a last evaluation from."""
        return []


AnyResults = ResultsFile | LinearResultsFile
RESULT_KINDS: dict[str, type[ResultsFile] | type[LinearResultsFile]] = {
    "deep": ResultsFile,
    "linear": LinearResultsFile,
}


def validate_results(payload: dict, origin: str) -> AnyResults:
    """The payload as its kind's model (no ``kind``: deep); an ``InputError`` naming file and fields if invalid."""
    kind = payload.get("kind", "deep")
    model = RESULT_KINDS.get(kind) if isinstance(kind, str) else None
    if model is None:
        expected = " or ".join(repr(name) for name in RESULT_KINDS)
        raise InputError(f"{origin}: field kind: expected {expected} (absent: 'deep'), found {kind!r}")
    try:
        return model.model_validate(payload)
    except ValidationError as error:
        raise InputError(
            f"{origin}: not a valid {kind} results file (schema {SCHEMA_VERSION}): {format_validation_error(error)}"
        ) from None


def write_results(path: str | Path, payload: dict) -> Path:
    """Validate, then write atomically (a reader never sees half a file)."""
    validate_results(payload, str(path))
    return atomic_write_json(path, payload)


def load_results(path: str | Path) -> AnyResults:
    path = Path(path)
    payload = read_json_object(path, "results file")
    version = payload.get("schema_version")
    if version != SCHEMA_VERSION:
        raise InputError(f"{path}: field schema_version: expected {SCHEMA_VERSION}, found {version!r}")
    return validate_results(payload, str(path))


# What each rule maximises: (the metrics it reads, the metric): the test split's R@1, or the validation split's R@1
# or MAP@R (never the test's).
_CRITERION = {
    "best_r1": ("metrics", "R@1"),
    "best_val_r1": ("validation_metrics", "R@1"),
    "best_val_map_r": ("validation_metrics", "MAP@R"),
}


def select(evaluations: list[dict], rule: str) -> dict:
    """The evaluation a selection rule picks: the last one, or the one with the best test R@1 (best_r1), the best
    validation R@1 (best_val_r1) or the best validation MAP@R (best_val_map_r), the earliest on ties. The record
    holds the pick's test metrics, and its validation metrics where it has them.

    >>> runs = [{"iteration": 1, "metrics": {"R@1": 50.0}, "validation_metrics": {"R@1": 40.0, "MAP@R": 9.0}},
    ...         {"iteration": 2, "metrics": {"R@1": 60.0}, "validation_metrics": {"R@1": 30.0, "MAP@R": 10.0}}]
    >>> select(runs, "best_r1")["iteration"], select(runs, "best_val_r1")["metrics"]
    (2, {'R@1': 50.0})
    >>> select(runs, "best_val_map_r")["iteration"]
    2
    """
    if rule == "final":
        chosen = evaluations[-1]
    elif rule in _CRITERION:
        source, metric = _CRITERION[rule]
        chosen = max(evaluations, key=lambda record: (record[source][metric], -record["iteration"]))
    else:
        raise ValueError(f"unknown selection rule {rule!r}")
    record = {"rule": rule, "iteration": chosen["iteration"], "metrics": dict(chosen["metrics"])}
    if chosen.get("validation_metrics") is not None:
        record["validation_metrics"] = dict(chosen["validation_metrics"])
    return record


def _applies(rule: str, evaluations: list[dict]) -> bool:
    """Whether every evaluation has the metric ``rule`` reads (final reads none)."""
    if rule not in _CRITERION:
        return True
    source, metric = _CRITERION[rule]
    return all(metric in (evaluation.get(source) or {}) for evaluation in evaluations)


def select_every_rule(evaluations: list[dict]) -> dict:
    """``select`` under every rule that applies: "final" always, "best_r1" when every evaluation has R@1,
    "best_val_r1" ("best_val_map_r") when every evaluation has a validation R@1 (MAP@R)."""
    return {rule: select(evaluations, rule) for rule in SELECTION_RULES if _applies(rule, evaluations)}


def deep_results_payload(
    recipe: Any,
    *,
    recipe_path: str | None,
    overrides: list[str],
    tier: Tier,
    weights_id: str | None,
    index_hashes: dict[str, str],
    git: dict[str, Any],
    environment: dict[str, Any],
    protocol: dict[str, Any],
    evaluations: list[dict],
    timing: dict[str, Any],
    total: int,
    resumed_runs: int,
    world_size: int,
    device_type: str,
    rehearsal: dict[str, int] | None = None,
    sampler: dict[str, Any] | None = None,
) -> dict:
    """A finished deep run's results file (``ResultsFile``'s fields), from what the trainer measured and the
    ``recipe`` (a ``dml_core.recipes.settings.Recipe``) it ran on a device of ``device_type``: the selection rules
    applied to its evaluations here, and the precision its model trained in. ``rehearsal``: a run cut short
    (``RehearsalRecord``'s fields); ``sampler``: the sampler as built (``SamplerRecord``'s fields)."""
    payload = {
        "schema_version": SCHEMA_VERSION,
        "status": "complete",
        "created": dt.datetime.now(dt.UTC).isoformat(timespec="seconds"),
        "recipe": {
            "id": recipe.id,
            "path": recipe_path,
            "sha256": recipe.content_hash(),
            "overrides": list(overrides),
            "content": recipe.model_dump(mode="json"),
        },
        "paper": recipe.paper,
        "targets": [target.model_dump() for target in recipe.targets],
        "dataset": recipe.data.dataset,
        "backbone": recipe.model.backbone,
        "backbone_width": recipe.model.width,
        "weights": {"requested": recipe.model.weights, "id": weights_id},
        "seed": recipe.training.seed,
        "tier": tier.value,
        "world_size": world_size,
        "precision": forward_precision(device_type, recipe.training.precision),
        "index_hashes": index_hashes,
        **({"sampler": sampler} if sampler is not None else {}),
        "git": git,
        "environment": environment,
        "evaluation_protocol": {**protocol, "selection_rule": recipe.evaluation.selection},
        "evaluations": evaluations,
        "selection": select(evaluations, recipe.evaluation.selection),
        "selections": select_every_rule(evaluations),
        "timing": {
            **timing,
            "iterations": total,
            "iterations_per_second": total / max(timing["train_seconds"], 1e-9),
            "resumed_runs": resumed_runs,
        },
    }
    return {**payload, "rehearsal": rehearsal} if rehearsal else payload
