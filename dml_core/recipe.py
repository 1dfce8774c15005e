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
from pydantic import BaseModel, ConfigDict, Field, ValidationError, model_validator

from dml_core.errors import InputError


class _Strict(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)


class Target(_Strict):
    """A published row this recipe reproduces: papers/<paper>/published.yaml, table id and row id."""

    table: str
    row: str


class TransformSettings(_Strict):
    resize_mode: Literal["squash", "shorter_side"] = "shorter_side"
    resize: int = 256
    train_crop: Literal["random_crop", "random_resized_crop"] = "random_resized_crop"
    crop_size: int | None = None  # None: the backbone's input size
    rrc_scale: tuple[float, float] = (0.16, 1.0)
    hflip: bool = True


class DataSettings(_Strict):
    dataset: str
    root: Path | None = None  # None: $DML_DATA_ROOT, else ./data
    transforms: TransformSettings = TransformSettings()
    num_workers: int = 4
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
    embedding_dim: int = 512
    normalize: bool = True  # L2-normalise the embedding the loss sees
    head: HeadSettings = HeadSettings()
    frozen_bn: bool = False
    freeze_backbone_epochs: int = 0


class LossSettings(_Strict):
    name: str
    params: dict[str, Any] = Field(default_factory=dict)
    lr_multiplier: float = 1.0  # for a loss's own parameters (proxies)


class SamplerSettings(_Strict):
    name: str
    params: dict[str, Any] = Field(default_factory=dict)


class OptimizerSettings(_Strict):
    name: Literal["sgd", "adam", "adamw", "rmsprop"]
    lr: float
    weight_decay: float = 0.0
    momentum: float = 0.0  # sgd, rmsprop
    new_layer_lr_multiplier: float = 1.0


class ScheduleSettings(_Strict):
    name: Literal["constant", "step", "multistep"] = "constant"
    unit: Literal["iteration", "epoch"] = "iteration"  # what step_size and milestones count
    step_size: int | None = None  # step: decay every step_size units
    milestones: list[int] = Field(default_factory=list)  # multistep: decay at these units
    gamma: float = 0.1

    @model_validator(mode="after")
    def _needs_its_fields(self) -> ScheduleSettings:
        if self.name == "step" and not self.step_size:
            raise ValueError("schedule 'step' needs step_size (iterations)")
        if self.name == "multistep" and not self.milestones:
            raise ValueError("schedule 'multistep' needs milestones (iterations)")
        return self


class TrainingSettings(_Strict):
    iterations: int | None = None
    epochs: int | None = None
    # Both counted in the run's unit (iterations, or epochs when ``epochs`` is set); the end is always evaluated.
    eval_every: int = 1000
    checkpoint_every: int = 1000
    seed: int = 0
    bf16: bool = True  # autocast of the model on CUDA only (losses run in fp32); CPU runs stay fp32
    channels_last: bool = True  # CUDA only
    compile: bool = False  # torch.compile the model
    sync_every: int = 50  # CUDA: iterations between host reads of the non-finite-loss watch
    eval_batch_size: int = 128

    @model_validator(mode="after")
    def _one_length(self) -> TrainingSettings:
        if (self.iterations is None) == (self.epochs is None):
            raise ValueError("give exactly one of iterations or epochs")
        return self


class EvaluationSettings(_Strict):
    metrics: list[Literal["recall", "map_at_r", "r_precision", "nmi", "f1"]] = Field(
        default_factory=lambda: ["recall", "nmi", "f1", "map_at_r", "r_precision"]
    )
    recall_ks: list[int] | None = None  # None: the dataset's standard list
    normalize: bool = True
    kmeans_backend: Literal["faiss", "sklearn"] = "faiss"
    kmeans_iterations: int = 20
    kmeans_seed: int = 0
    selection: Literal["best_r1", "final"] = "best_r1"


class SmokeSettings(_Strict):
    """How ``--smoke`` shrinks the recipe: embedded dataset, random init, small images, few iterations."""

    iterations: int = 60
    eval_every: int = 30
    image_size: int = 64
    resize: int = 72
    sampler_params: dict[str, Any] = Field(default_factory=dict)


class Recipe(_Strict):
    id: str
    paper: Literal["damlrrm", "anml", "gpw", "drml", "cgml"] | None = None
    targets: list[Target] = Field(default_factory=list)
    description: str = ""
    assumptions: list[str] = Field(default_factory=list)
    data: DataSettings
    model: ModelSettings
    loss: LossSettings
    sampler: SamplerSettings
    optimizer: OptimizerSettings
    schedule: ScheduleSettings = ScheduleSettings()
    training: TrainingSettings
    evaluation: EvaluationSettings = EvaluationSettings()
    smoke: SmokeSettings = SmokeSettings()

    def content_hash(self) -> str:
        """sha256 of the resolved recipe (after overrides), independent of YAML formatting."""
        canonical = json.dumps(self.model_dump(mode="json"), sort_keys=True, separators=(",", ":"))
        return hashlib.sha256(canonical.encode()).hexdigest()


def _set_path(tree: dict, dotted: str, value: Any, origin: str) -> None:
    keys = dotted.split(".")
    node = tree
    for key in keys[:-1]:
        child = node.get(key)
        if child is None:
            child = node[key] = {}
        if not isinstance(child, dict):
            raise InputError(f"{origin}: cannot set {dotted!r}: {key!r} is not a section")
        node = child
    node[keys[-1]] = value


def apply_overrides(tree: dict, overrides: list[str], origin: str = "--set") -> dict:
    """Apply ``key.path=value`` overrides (values parsed as YAML: 3 -> int, [1, 2] -> list)."""
    for override in overrides:
        if "=" not in override:
            raise InputError(f"{origin}: expected key.path=value, found {override!r}")
        key, raw = override.split("=", 1)
        _set_path(tree, key.strip(), yaml.safe_load(raw), origin)
    return tree


def parse_recipe(tree: dict, origin: str) -> Recipe:
    try:
        return Recipe.model_validate(tree)
    except ValidationError as error:
        problems = []
        for item in error.errors():
            field = ".".join(str(part) for part in item["loc"]) or "(top level)"
            found = item.get("input")
            found_text = "" if isinstance(found, dict) else f"; found {found!r}"
            problems.append(f"field {field}: {item['msg']}{found_text}")
        raise InputError(f"{origin}: invalid recipe: " + "; ".join(problems)) from None


def load_recipe(path: str | Path, overrides: list[str] = ()) -> Recipe:
    """Read a recipe YAML, apply ``--set`` overrides, validate."""
    path = Path(path)
    if not path.exists():
        raise InputError(f"{path}: recipe file not found")
    try:
        tree = yaml.safe_load(path.read_text())
    except yaml.YAMLError as error:
        raise InputError(f"{path}: not valid YAML ({error})") from None
    if not isinstance(tree, dict):
        raise InputError(f"{path}: expected a mapping at the top level, found {type(tree).__name__}")
    return parse_recipe(apply_overrides(tree, list(overrides)), str(path))


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
