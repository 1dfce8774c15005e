"""Typed recipes: one YAML file pins everything a training run does.

Pydantic models with ``extra="forbid"``: an unknown key or a wrong type is an error that names the file and the
field path. Names of datasets, losses, samplers and heads are checked against their registries
(``dml_core.registry``) when the run is checked or built, not here, so this module stays free of heavy imports.
Beside it: the content hash (``hashing``), the tiers' shrinking (``tiers``), ``--set`` overrides (``compose``) and
the one way a run becomes its recipe (``resolve``).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any, Literal

from pydantic import (
    Field,
    NonNegativeFloat,
    NonNegativeInt,
    PositiveFloat,
    PositiveInt,
    field_validator,
    model_validator,
)

from dml_core.evaluation.registry import MetricName
from dml_core.recipes import hashing
from dml_core.recipes.optimizers import OptimizerName
from dml_core.schema import StrictModel
from dml_core.vocabulary import Backbone, PaperKey, StudyKey


class Target(StrictModel):
    """A published row this recipe reproduces: papers/<paper>/published.yaml, table id and row id."""

    table: str
    row: str


class TransformSettings(StrictModel):
    """The preprocessing a recipe names (``data.transforms``), as the data pipeline takes it
    (``data.transforms.build_transform``, ``pipeline.batch_augment``): the one type of both, so it lives here, where
    nothing imports torch.

    The defaults enter every content hash (a recipe that leaves a field out is hashed with its default), so they
    stay as the first hashed runs had them: ``random_resized_crop`` among them, though every paper's recipe states
    its crop. Code that builds transforms by hand states ``train_crop`` where it relies on one."""

    resize_mode: Literal["squash", "shorter_side"] = "shorter_side"
    resize: PositiveInt = 256
    train_crop: Literal["random_crop", "random_resized_crop"] = "random_resized_crop"
    crop_size: PositiveInt | None = None  # None: the backbone's input size
    rrc_scale: tuple[PositiveFloat, PositiveFloat] = (0.16, 1.0)
    hflip: bool = True

    @model_validator(mode="after")
    def _crop_within_resize(self) -> TransformSettings:
        if self.crop_size is not None and self.crop_size > self.resize:
            raise ValueError(f"crop_size: expected at most resize ({self.resize}), found {self.crop_size}")
        return self


class ValidationSplitSettings(StrictModel):
    """A class-disjoint validation split carved from the training classes (``data.validation``): ``fraction`` of
    them held out, chosen by ``seed`` alone, so every method and every run seed holds out the same classes
    (``dml_core.data.validation_split``). Model selection can then read it instead of the test classes."""

    fraction: float = Field(gt=0, lt=1)
    seed: NonNegativeInt = 0


# The input pipelines a run can take (``pipeline.choice``), and what a recipe may set: one of them, or "auto".
Pipeline = Literal["pil", "cache"]
PipelineSetting = Literal["auto", Pipeline]


class DataSettings(StrictModel):
    dataset: str
    # None: no validation split (train on every training class, as the papers do)
    validation: ValidationSplitSettings | None = None
    root: Path | None = None  # None: $DML_DATA_ROOT, else ./data
    transforms: TransformSettings = TransformSettings()
    # DataLoader workers: "auto" fits them to the machine (``pipeline.loaders.loader_workers``; the results file
    # records the number); not hashed: the batches are the same whatever the number
    num_workers: NonNegativeInt | Literal["auto"] = "auto"
    # "pil": decode + augment in DataLoader workers (the reference). "cache": the decoded uint8 cache on the device,
    # cropped/flipped/normalised there in batch. "auto": the cache on CUDA where its batches are the PIL path's, the
    # PIL path elsewhere (``pipeline.choice``; the results file records which ran)
    pipeline: PipelineSetting = "auto"

    @property
    def cache_gives_pil_batches(self) -> bool:
        """Whether the cache pipeline's batches are the PIL path's: for random crops of the resized image, yes
        (tested bit for bit); for random resized crops, no: the cache holds the resized image, the PIL path cuts
        them from the full-size one."""
        return self.transforms.train_crop == "random_crop"

    @property
    def hashed_pipeline(self) -> str:
        """The pipeline as the content hash sees it: "pil" wherever the batches are the PIL path's, whatever the
        setting; "cache" for the cache where its batches differ."""
        return "cache" if self.pipeline == "cache" and not self.cache_gives_pil_batches else "pil"


class HeadSettings(StrictModel):
    name: str = "linear"  # checked against ``models.heads.HEADS`` (``runner.component_check``), as losses and samplers
    params: dict[str, Any] = Field(default_factory=dict)


class ModelSettings(StrictModel):
    backbone: Backbone
    # Channel-width multiplier of the backbone: 1 is the published network; 1/2, 1/4, 1/8 narrow every layer
    # (random weights only; the mini tier's stand-in for a network too slow on a CPU)
    width: Literal[1.0, 0.5, 0.25, 0.125] = 1.0
    # "pretrained" (the known ImageNet file, sha256-checked), "random", a path, or "glyph-pretrained" (a narrowed
    # backbone trained on other glyphs, cached under the data root: the mini tier's mini.start)
    weights: str = "pretrained"
    pooling: Literal["avg", "max", "avg+max"] = "avg"
    embedding_dim: PositiveInt = 512
    normalize: bool = True  # L2-normalise the embedding the loss sees
    head: HeadSettings = HeadSettings()
    frozen_bn: bool = False
    freeze_backbone_epochs: NonNegativeInt = 0
    # Training batches whose BN statistics replace a random backbone's (mean 0, variance 1) before the first
    # update (``models.batchnorm_statistics``); 0: as built or loaded. The mini tier sets it.
    measure_bn_batches: NonNegativeInt = 0


class LossSettings(StrictModel):
    name: str
    params: dict[str, Any] = Field(default_factory=dict)
    lr_multiplier: PositiveFloat = 1.0  # for a loss's own parameters (proxies)


class SamplerSettings(StrictModel):
    name: str
    params: dict[str, Any] = Field(default_factory=dict)


class OptimizerSettings(StrictModel):
    name: OptimizerName
    lr: PositiveFloat
    weight_decay: NonNegativeFloat = 0.0
    momentum: float = Field(default=0.0, ge=0.0, lt=1.0)  # for the optimisers that take one (sgd, rmsprop)
    new_layer_lr_multiplier: PositiveFloat = 1.0


class ScheduleSettings(StrictModel):
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


Precision = Literal["fp32", "bf16"]


def forward_precision(device_type: str, precision: Precision) -> Precision:
    """The precision of a run's training forward on a device of ``device_type``: ``training.precision`` (the shared
    reading ``precision``) on CUDA, fp32 elsewhere (``training.step.autocast``; the results file records it).

    >>> forward_precision("cuda", "bf16"), forward_precision("cuda", "fp32"), forward_precision("cpu", "bf16")
    ('bf16', 'fp32', 'fp32')
    """
    return precision if device_type == "cuda" else "fp32"


def _with_one_length(settings: Any) -> Any:
    """A run's length is counted one way: ``settings`` (training or mini) sets iterations or epochs, not both."""
    if (settings.iterations is None) == (settings.epochs is None):
        raise ValueError("give exactly one of iterations or epochs")
    return settings


class TrainingSettings(StrictModel):
    iterations: PositiveInt | None = None
    epochs: PositiveInt | None = None
    # Both counted in the run's unit (iterations, or epochs when ``epochs`` is set); the end is always evaluated.
    eval_every: PositiveInt = 1000
    checkpoint_every: PositiveInt = 1000
    seed: NonNegativeInt = 0
    # the model's precision on CUDA, where bf16 autocasts it (losses and test embeddings in fp32); CPU runs stay
    # fp32. The recipes set it through the shared reading ``precision`` (reproduce/readings.yaml)
    precision: Precision = "fp32"
    channels_last: bool = True  # CUDA only
    compile: bool = False  # torch.compile the model
    # CUDA only: capture the model's training forward and backward as CUDA graphs once, replay them every step
    # (``training.cuda_graphs``: fewer host launches; meant to give eager's numbers, checked on a GPU)
    cuda_graphs: bool = False
    sync_every: PositiveInt = 50  # CUDA: iterations between host reads of the non-finite-loss watch
    eval_batch_size: PositiveInt = 128
    grad_clip_norm: PositiveFloat | None = None  # clip the gradients' total norm before each step (None: no clipping)
    evaluate_at_start: bool = False  # evaluate before the first update too (the mini tier's untrained numbers)
    # deterministic kernels (CUDA too: cuDNN, cuBLAS; ``training.determinism``); false trades them for speed
    deterministic: bool = True

    @model_validator(mode="before")
    @classmethod
    def _precision_from_bf16(cls, data: Any) -> Any:
        """Read the flag this setting replaced (``bf16: true | false``), which committed results files record."""
        if not isinstance(data, dict) or "bf16" not in data:
            return data
        if "precision" in data:
            raise ValueError("training.bf16 and training.precision: expected precision only, found both")
        data = dict(data)
        bf16 = data.pop("bf16")
        data["precision"] = ("bf16" if bf16 else "fp32") if isinstance(bf16, bool) else bf16
        return data

    @model_validator(mode="after")
    def _one_length(self) -> TrainingSettings:
        return _with_one_length(self)

    @model_validator(mode="after")
    def _one_kind_of_graph(self) -> TrainingSettings:
        if self.compile and self.cuda_graphs:
            raise ValueError(
                "training.compile and training.cuda_graphs: expected at most one of them (torch.compile captures "
                "graphs of its own), found both"
            )
        return self


class EvaluationSettings(StrictModel):
    metrics: list[MetricName] = Field(default_factory=lambda: ["recall", "nmi", "f1", "map_at_r", "r_precision"])
    recall_ks: list[PositiveInt] | None = None  # None: the dataset's standard list
    normalize: bool = True
    kmeans_backend: Literal["faiss", "sklearn"] = "faiss"
    kmeans_iterations: PositiveInt = 20
    kmeans_seed: NonNegativeInt = 0
    # the evaluation a run reports; the recipes set it through the shared reading ``selection`` (readings.yaml).
    # best_val_r1 (best_val_map_r): the best R@1 (MAP@R) on the validation split (``data.validation``), never on the
    # test classes
    selection: Literal["best_r1", "final", "best_val_r1", "best_val_map_r"] = "best_r1"


class SmokeSettings(StrictModel):
    """How ``--smoke`` shrinks the recipe: embedded dataset, random init, small images, few iterations."""

    iterations: PositiveInt = 60
    eval_every: PositiveInt = 30
    image_size: PositiveInt = 64
    resize: PositiveInt = 72
    sampler_params: dict[str, Any] = Field(default_factory=dict)


class MiniSettings(StrictModel):
    """How ``--mini`` shrinks the recipe to show that it learns on the CPU: the larger embedded set
    (``embedded_mini``), random init, a narrowed backbone of the same family, small images, a few hundred
    iterations, an evaluation before the first update and one at the end. Everything else (loss, sampler and its
    P x K shape where it fits, parameter groups and their multipliers, BN freezing, warm-up, schedule shape, head)
    stays as the recipe says.

    The length is ``iterations``, or ``epochs`` of the mini set for a recipe counted in epochs (its backbone
    warm-up and epoch schedule then scale with it). ``trunk_lr_scale`` multiplies the backbone's learning rate
    only: the recipe's rate fine-tunes pretrained weights over thousands of iterations, far too slow for a
    backbone that starts from random weights, like the new layers do; the new layers' and the loss's own rates
    (heads, proxies) stay exactly the recipe's.

    ``start`` is where the backbone starts: ``random`` (the tier's pages), or ``glyph-pretrained``, the same narrowed
    backbone first trained by softmax classification on glyph classes the mini set does not contain
    (``dml_core.models.glyph_pretraining``; cached under the data root): a stand-in for the recipes' ImageNet
    weights, for a diagnostic beside the pages (such a start usually wants ``trunk_lr_scale`` 1, the recipe's own
    rates)."""

    iterations: PositiveInt | None = 300
    epochs: PositiveInt | None = None
    image_size: PositiveInt = 64
    resize: PositiveInt = 72
    sampler_params: dict[str, Any] = Field(default_factory=dict)
    backbone_width: Literal[1.0, 0.5, 0.25, 0.125] = 0.25
    trunk_lr_scale: PositiveFloat = 1.0
    start: Literal["random", "glyph-pretrained"] = "random"

    @model_validator(mode="before")
    @classmethod
    def _epochs_replace_iterations(cls, value: Any) -> Any:
        if isinstance(value, dict) and value.get("epochs") is not None and "iterations" not in value:
            return {**value, "iterations": None}
        return value

    @model_validator(mode="after")
    def _one_length(self) -> MiniSettings:
        return _with_one_length(self)


class Recipe(StrictModel):
    id: str
    paper: PaperKey | StudyKey | None = None  # the recipe folder: a paper's, or a study's (not hashed)
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
    mini: MiniSettings = MiniSettings()

    @field_validator("assumptions", mode="before")
    @classmethod
    def _sentences(cls, value: Any) -> Any:
        """A list of sentences (a recipe of one's own) is numbered."""
        if isinstance(value, list):
            return {str(number): text for number, text in enumerate(value, start=1)}
        return value

    @model_validator(mode="after")
    def _validation_selection_has_its_split(self) -> Recipe:
        if self.evaluation.selection in ("best_val_r1", "best_val_map_r") and self.data.validation is None:
            raise ValueError(
                f"evaluation.selection: {self.evaluation.selection!r} selects on the validation split; expected "
                "data.validation (fraction, seed), found none"
            )
        return self

    @property
    def run_name(self) -> str:
        """The id, and the non-default readings after a ``~`` (how run folders and results files are named)."""
        return f"{self.id}~{self.variant}" if self.variant else self.id

    def computation(self) -> dict[str, Any]:
        """What changes the numbers, in canonical form (``recipes.hashing.computation``)."""
        return hashing.computation(self)

    def content_hash(self) -> str:
        """sha256 of ``computation()``: rewording an assumption or retargeting a row leaves it unchanged."""
        return hashing.content_hash(self)

    def hashes_of_this_computation(self) -> tuple[str, ...]:
        """``content_hash()`` and the hash earlier versions recorded for the same computation: results files and
        checkpoints that carry either are this run's (``recipes.hashing``)."""
        return hashing.hashes_of_this_computation(self)

    def smoke_hash(self) -> str:
        """sha256 of the smoke settings (how ``--smoke`` shrinks this recipe)."""
        return hashing.smoke_hash(self)

    def mini_hash(self) -> str:
        """sha256 of the mini settings (how ``--mini`` shrinks this recipe)."""
        return hashing.mini_hash(self)
