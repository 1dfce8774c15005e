"""Typed recipes: one YAML file pins everything a training run does.

Pydantic models with ``extra="forbid"``: an unknown key or a wrong type is an error that names the file and the
field path. ``--set a.b=value`` overrides a field (the value is parsed as YAML). Names of datasets, backbones,
losses and samplers are checked against their registries when the run is built, not here, so this module stays
free of heavy imports.
"""

from __future__ import annotations

import hashlib
import json
from pathlib import Path
from typing import Any, Literal

import yaml
from pydantic import (
    BaseModel,
    ConfigDict,
    Field,
    NonNegativeFloat,
    NonNegativeInt,
    PositiveFloat,
    PositiveInt,
    field_validator,
    model_validator,
)

from dml_core.errors import InputError


class _Strict(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)


class Target(_Strict):
    """A published row this recipe reproduces: papers/<paper>/published.yaml, table id and row id."""

    table: str
    row: str


class TransformSettings(_Strict):
    resize_mode: Literal["squash", "shorter_side"] = "shorter_side"
    resize: PositiveInt = 256
    train_crop: Literal["random_crop", "random_resized_crop"] = "random_resized_crop"
    crop_size: PositiveInt | None = None  # None: the backbone's input size
    rrc_scale: tuple[PositiveFloat, PositiveFloat] = (0.16, 1.0)
    hflip: bool = True


class DataSettings(_Strict):
    dataset: str
    root: Path | None = None  # None: $DML_DATA_ROOT, else ./data
    transforms: TransformSettings = TransformSettings()
    num_workers: NonNegativeInt = 4
    # "pil": decode + augment in DataLoader workers (the reference; CPU runs). "cache": the decoded uint8 cache
    # (`dml prepare DATASET --cache MODE`) on the device, cropped/flipped/normalised there in batch.
    pipeline: Literal["pil", "cache"] = "pil"


class HeadSettings(_Strict):
    name: Literal["linear", "multi_level_fusion", "relational"] = "linear"
    params: dict[str, Any] = Field(default_factory=dict)


class ModelSettings(_Strict):
    backbone: Literal["bn_inception", "googlenet", "resnet50"]
    weights: str = "pretrained"  # "pretrained" (the known ImageNet file, sha256-checked), "random", or a path
    pooling: Literal["avg", "max", "avg+max"] = "avg"
    embedding_dim: PositiveInt = 512
    normalize: bool = True  # L2-normalise the embedding the loss sees
    head: HeadSettings = HeadSettings()
    frozen_bn: bool = False
    freeze_backbone_epochs: NonNegativeInt = 0


class LossSettings(_Strict):
    name: str
    params: dict[str, Any] = Field(default_factory=dict)
    lr_multiplier: PositiveFloat = 1.0  # for a loss's own parameters (proxies)


class SamplerSettings(_Strict):
    name: str
    params: dict[str, Any] = Field(default_factory=dict)


class OptimizerSettings(_Strict):
    name: Literal["sgd", "adam", "adamw", "rmsprop"]
    lr: PositiveFloat
    weight_decay: NonNegativeFloat = 0.0
    momentum: float = Field(default=0.0, ge=0.0, lt=1.0)  # sgd, rmsprop
    new_layer_lr_multiplier: PositiveFloat = 1.0


class ScheduleSettings(_Strict):
    name: Literal["constant", "step", "multistep"] = "constant"
    unit: Literal["iteration", "epoch"] = "iteration"  # what step_size and milestones count
    step_size: PositiveInt | None = None  # step: decay every step_size units
    milestones: list[PositiveInt] = Field(default_factory=list)  # multistep: decay at these units
    gamma: PositiveFloat = 0.1

    @model_validator(mode="after")
    def _needs_its_fields(self) -> ScheduleSettings:
        if self.name == "step" and not self.step_size:
            raise ValueError("schedule 'step' needs step_size (iterations)")
        if self.name == "multistep" and not self.milestones:
            raise ValueError("schedule 'multistep' needs milestones (iterations)")
        return self


class TrainingSettings(_Strict):
    iterations: PositiveInt | None = None
    epochs: PositiveInt | None = None
    # Both counted in the run's unit (iterations, or epochs when ``epochs`` is set); the end is always evaluated.
    eval_every: PositiveInt = 1000
    checkpoint_every: PositiveInt = 1000
    seed: NonNegativeInt = 0
    bf16: bool = True  # autocast of the model on CUDA only (losses run in fp32); CPU runs stay fp32
    channels_last: bool = True  # CUDA only
    compile: bool = False  # torch.compile the model
    sync_every: PositiveInt = 50  # CUDA: iterations between host reads of the non-finite-loss watch
    eval_batch_size: PositiveInt = 128
    grad_clip_norm: PositiveFloat | None = None  # clip the gradients' total norm before each step (None: no clipping)

    @model_validator(mode="after")
    def _one_length(self) -> TrainingSettings:
        if (self.iterations is None) == (self.epochs is None):
            raise ValueError("give exactly one of iterations or epochs")
        return self


class EvaluationSettings(_Strict):
    metrics: list[Literal["recall", "map_at_r", "r_precision", "nmi", "f1"]] = Field(
        default_factory=lambda: ["recall", "nmi", "f1", "map_at_r", "r_precision"]
    )
    recall_ks: list[PositiveInt] | None = None  # None: the dataset's standard list
    normalize: bool = True
    kmeans_backend: Literal["faiss", "sklearn"] = "faiss"
    kmeans_iterations: PositiveInt = 20
    kmeans_seed: NonNegativeInt = 0
    selection: Literal["best_r1", "final"] = "best_r1"


class SmokeSettings(_Strict):
    """How ``--smoke`` shrinks the recipe: embedded dataset, random init, small images, few iterations."""

    iterations: PositiveInt = 60
    eval_every: PositiveInt = 30
    image_size: PositiveInt = 64
    resize: PositiveInt = 72
    sampler_params: dict[str, Any] = Field(default_factory=dict)


class Recipe(_Strict):
    id: str
    paper: Literal["damlrrm", "anml", "gpw", "drml", "cgml"] | None = None
    targets: list[Target] = Field(default_factory=list)
    description: str = ""
    # id -> text (reproduce/<paper>/assumptions.yaml); a recipe outside a paper folder may list sentences
    assumptions: dict[str, str] = Field(default_factory=dict)
    readings: dict[str, str] = Field(default_factory=dict)  # reading -> the value this run takes
    variant: str = ""  # the non-default readings, "name=value~...": "" for the paper's default reading
    data: DataSettings
    model: ModelSettings
    loss: LossSettings
    sampler: SamplerSettings
    optimizer: OptimizerSettings
    schedule: ScheduleSettings = ScheduleSettings()
    training: TrainingSettings
    evaluation: EvaluationSettings = EvaluationSettings()
    smoke: SmokeSettings = SmokeSettings()

    @field_validator("assumptions", mode="before")
    @classmethod
    def _sentences(cls, value: Any) -> Any:
        """A list of sentences (a recipe of one's own) is numbered."""
        if isinstance(value, list):
            return {str(number): text for number, text in enumerate(value, start=1)}
        return value

    @property
    def run_name(self) -> str:
        """The id, and the non-default readings after a ``~`` (how run folders and results files are named)."""
        return f"{self.id}~{self.variant}" if self.variant else self.id

    def computation(self) -> dict[str, Any]:
        """What changes the numbers, in canonical form: the settings and the readings, without prose, targets,
        ids, the smoke settings (``smoke_hash``) or what only says where or how fast (data root, workers,
        checkpoint interval, host-sync interval)."""
        tree = self.model_dump(mode="json", exclude=set(_NOT_COMPUTATION))
        for section, keys in _NOT_COMPUTATION_FIELDS.items():
            for key in keys:
                tree[section].pop(key, None)
        return tree

    def content_hash(self) -> str:
        """sha256 of ``computation()``: rewording an assumption or retargeting a row leaves it unchanged."""
        return _sha256(self.computation())

    def smoke_hash(self) -> str:
        """sha256 of the smoke settings (how ``--smoke`` shrinks this recipe)."""
        return _sha256(self.smoke.model_dump(mode="json"))


# Recipe fields and sub-fields that do not change a run's numbers (left out of its content hash).
_NOT_COMPUTATION = ("id", "paper", "targets", "description", "assumptions", "variant", "smoke")
_NOT_COMPUTATION_FIELDS = {"data": ("root", "num_workers"), "training": ("checkpoint_every", "sync_every")}


def _sha256(tree: Any) -> str:
    canonical = json.dumps(tree, sort_keys=True, separators=(",", ":"))
    return hashlib.sha256(canonical.encode()).hexdigest()


def parse_override(override: str, origin: str = "--set") -> dict[str, Any]:
    """``key.path=value`` as a one-leaf settings layer (the value parsed as YAML: 3 -> int, [1, 2] -> list).

    >>> parse_override("loss.params.alpha=26")
    {'loss.params.alpha': 26}
    """
    if "=" not in override:
        raise InputError(f"{origin}: expected key.path=value, found {override!r}")
    key, raw = override.split("=", 1)
    try:
        value = yaml.safe_load(raw)
    except yaml.YAMLError as error:
        raise InputError(f"{origin}: {key.strip()}: the value is not valid YAML ({error})") from None
    return {key.strip(): value}


def smoke_version(recipe: Recipe) -> Recipe:
    """The same recipe shrunk for a CPU smoke run on the embedded dataset (results are marked smoke); its
    ``data.pipeline`` stays (the embedded set's image cache is built on first use)."""
    smoke = recipe.smoke
    tree = recipe.model_dump(mode="python")
    tree["data"]["dataset"] = "embedded"
    tree["data"]["num_workers"] = 0
    tree["data"]["transforms"].update(crop_size=smoke.image_size, resize=smoke.resize)
    tree["model"]["weights"] = "random"
    tree["sampler"]["params"].update(smoke.sampler_params)
    tree["training"].update(
        iterations=smoke.iterations,
        epochs=None,
        eval_every=smoke.eval_every,
        checkpoint_every=smoke.eval_every,
        bf16=False,
    )
    tree["evaluation"]["recall_ks"] = [1, 2, 4, 8]
    if tree["schedule"]["name"] != "constant":
        # Keep the schedule's shape: scale its decay points to the smoke length, in iterations.
        total = recipe.training.iterations if recipe.schedule.unit == "iteration" else recipe.training.epochs
        scale = smoke.iterations / max(total or smoke.iterations, 1)
        tree["schedule"]["unit"] = "iteration"
        if tree["schedule"]["step_size"]:
            tree["schedule"]["step_size"] = max(1, round(tree["schedule"]["step_size"] * scale))
        tree["schedule"]["milestones"] = [max(1, round(m * scale)) for m in tree["schedule"]["milestones"]]
    return Recipe.model_validate(tree)
