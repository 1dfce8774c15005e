"""How long a run is expected to take, and on what that rests. In order, the first that exists:

1. measured here: its training shape timed on this device before the runs (``calibration``), times its steps, plus
   its evaluations' embedding passes timed the same way;
2. a committed measurement (``tables/benchmarks/training-*.json``: end-to-end iterations per second) of the same
   training shape on a GPU of this class, times its steps;
3. the cost model: the committed measurement nearest to the run's shape (this GPU class first), its seconds a step
   scaled by the backbone's forward FLOPs per image times the images per step and by the precision
   (``FP32_OVER_BF16``), what else differs said and not scaled;
4. the paper's published training time (a ``training_time`` table row the run targets; a full-scale CUDA run
   only);
5. unknown, with the reason.

A measurement serves only where its file records its shape (``TrainingShape``), and only CUDA runs: a GPU's figure
says nothing of a CPU's. Evaluations are counted where measured here only."""

from __future__ import annotations

import json
import math
from collections.abc import Mapping
from dataclasses import dataclass, field, fields
from functools import cache
from pathlib import Path

from dml_core.errors import InputError
from dml_core.output_paths import REPOSITORY_ROOT, device_slug
from dml_core.published import PublishedPaper, load_published
from dml_core.readable import readable_duration
from dml_core.recipes.settings import Recipe
from dml_core.runner.calibration import Calibration
from dml_core.runner.training_shape import RunLength, TrainingShape, layout_problem, run_length, training_shape

BENCHMARKS_DIR = REPOSITORY_ROOT / "tables" / "benchmarks"

# A step's time in fp32 over its time under bf16 autocast, for the cost model (an assumption, not a measurement):
# fp32 convolutions run on the tensor cores in TF32 (torch's default for cuDNN), whose rate is half bf16's on the
# A100, H100 and H200 (NVIDIA's datasheets). A step bound by the host's launches rather than the device slows less.
FP32_OVER_BF16 = 2.0
# How far the cost model scales a measurement: shapes whose FLOPs a step are within this factor of the measured
# one's, either way. A step's fixed costs (the host's launches, the loss) do not scale with FLOPs, so a shape far
# smaller or larger than the measured one would get a figure with nothing to stand on.
COST_MODEL_REACH = 4.0

# Each basis, in the order they are tried, and how a plan's sum names the hours resting on it.
BASES = {
    (MEASURED_HERE := "measured here"): "measured here",
    (COMMITTED := "measured"): "from committed measurements",
    (COST_MODEL := "cost model"): "by the cost model",
    (PUBLISHED := "the paper's published time"): "from the paper's published times, on its authors' GPUs",
    (UNKNOWN := "unknown"): "unknown",
}


@dataclass(frozen=True)
class Measurement:
    """A committed end-to-end training speed of one training shape on one device class."""

    shape: TrainingShape
    iterations_per_second: float
    device: str
    run: str  # "<paper> <recipe id>"
    images: str  # what it trained on, as the file says ("embedded, crop 227")
    file: str

    def text(self) -> str:
        return (
            f"{self.run} on {self.device}: {self.iterations_per_second:.1f} it/s end to end, {self.shape.text()}, "
            f"images: {self.images} ({self.file})"
        )


@dataclass(frozen=True)
class Expected:
    """A run's expected hours (None: unknown), their basis (``MEASURED_HERE`` ... ``UNKNOWN``), how they were
    reached (``detail``), and the committed measurement they rest on, if any."""

    hours: float | None
    basis: str
    detail: str
    reference: Measurement | None = None

    def duration(self) -> str:
        """The hours in words, and what they count where not the evaluations too."""
        if self.hours is None:
            return "unknown"
        return readable_duration(self.hours * 3600) + ("" if self.basis == MEASURED_HERE else " of training")

    def source(self, reference_label: str | None = None) -> str:
        """The basis and its detail in words; the reference named by ``reference_label`` (a plan's legend) or in
        full."""
        if self.reference is None:
            return self.detail if self.basis == UNKNOWN else f"{self.basis}: {self.detail}"
        named = reference_label or f"({self.reference.text()})"
        return (
            f"{self.basis} {named}: {self.detail}"
            if self.basis == COMMITTED
            else f"{self.basis} from {named}: {self.detail}"
        )


@cache
def _benchmark_reports(folder: Path) -> tuple[dict, ...]:
    reports = []
    for path in sorted(folder.glob("training-*.json")):
        try:
            report = json.loads(path.read_text(encoding="utf-8"))
        except (OSError, ValueError):
            continue  # a damaged benchmark file costs the estimate, never the run
        if isinstance(report, dict) and isinstance(report.get("papers"), dict):
            reports.append({**report, "file": path.relative_to(folder.parent.parent).as_posix()})
    return tuple(reports)


def committed_measurements(folder: Path) -> list[Measurement]:
    """Every committed GPU measurement whose file records its training shape (``papers.<key>.shape``, the pipeline
    being the figures' own), in file order."""
    found = []
    for report in _benchmark_reports(folder):
        device = report.get("device")
        if not isinstance(device, str) or str(report.get("mode", "")).startswith("reduced"):
            continue  # the CPU's reduced mode measures the smoke recipes: no full-scale shape
        for key, record in report["papers"].items():
            if not isinstance(record, dict) or not isinstance(record.get("pipelines"), dict):
                continue
            for pipeline, figures in record["pipelines"].items():
                shape = TrainingShape.from_record({**(record.get("shape") or {}), "pipeline": pipeline})
                rate = figures.get("end_to_end_iterations_per_second") if isinstance(figures, dict) else None
                if shape is None or not isinstance(rate, int | float) or not (rate > 0 and math.isfinite(rate)):
                    continue
                run = f"{key} {record.get('recipe', '?')}"
                found.append(
                    Measurement(shape, float(rate), device, run, str(record.get("images", "?")), report["file"])
                )
    return found


def _nearest(shape: TrainingShape, gpu_name: str | None, measurements: list[Measurement]) -> Measurement | None:
    """The measurement that serves ``shape`` best: this GPU class first, then the most fields in common (the
    backbone, the precision and the pipeline before the rest)."""

    def closeness(measurement: Measurement) -> tuple:
        other = measurement.shape
        same = [getattr(shape, name) == getattr(other, name) for name in ("backbone", "precision", "pipeline")]
        common = sum(getattr(shape, name.name) == getattr(other, name.name) for name in fields(shape))
        return (gpu_name is not None and device_slug(measurement.device) == device_slug(gpu_name), *same, common)

    return max(measurements, key=closeness, default=None)  # the first of equals: file order


def _scaled(shape: TrainingShape, reference: TrainingShape) -> tuple[float, list[str], list[str]]:
    """The cost model's factor on the reference's seconds a step, the scalings it applied and the differences it
    did not scale, in words."""
    flops = shape.flops_per_step() / reference.flops_per_step()
    factor, scaled = flops, []
    if shape.backbone != reference.backbone or shape.width != reference.width or shape.batch != reference.batch:
        scaled.append(f"backbone FLOPs x images a step x{flops:.2f}")
    elif shape.crop != reference.crop:
        scaled.append(f"crop {shape.crop} against {reference.crop} px x{flops:.2f}")
    if shape.precision != reference.precision:
        precision = FP32_OVER_BF16 if shape.precision == "fp32" else 1 / FP32_OVER_BF16
        factor *= precision
        scaled.append(f"{shape.precision} against {reference.precision} x{precision:.2f}, assumed")
    unscaled = [
        f"{name} {getattr(shape, name)} against {getattr(reference, name)}"
        for name in ("head", "pipeline", "loss")
        if getattr(shape, name) != getattr(reference, name)
    ]
    return factor, scaled, unscaled


def other_device(reference: Measurement, gpu_name: str | None) -> str:
    """How the reference's device differs from the GPU the runs train on ("": the same class)."""
    if gpu_name is None:
        return f"its hours are an {reference.device}'s: no GPU here"
    if device_slug(reference.device) != device_slug(gpu_name):
        return f"its hours are an {reference.device}'s, not this {gpu_name}'s"
    return ""


def from_measurement(
    shape: TrainingShape, length: RunLength, reference: Measurement, gpu_name: str | None
) -> Expected | str:
    """A CUDA run's hours from a committed measurement: as measured where the shape and device class are the same,
    else by the cost model; where the shape is beyond the cost model's reach, why."""
    if shape == reference.shape and not other_device(reference, gpu_name):
        rate = reference.iterations_per_second
        return Expected(length.steps / rate / 3600, COMMITTED, f"{rate:.1f} it/s x {length.text()}", reference)
    flops = shape.flops_per_step() / reference.shape.flops_per_step()
    if not 1 / COST_MODEL_REACH <= flops <= COST_MODEL_REACH:
        return (
            f"its FLOPs a step are {flops:.2g} times those of the nearest committed measurement ({reference.run} on "
            f"{reference.device}): beyond the cost model's reach ({COST_MODEL_REACH:g}x either way)"
        )
    factor, scaled, unscaled = _scaled(shape, reference.shape)
    rate = reference.iterations_per_second / factor
    how = " and ".join(scaled) or "the same shape"
    total = f"x{factor:.2f} = " if len(scaled) > 1 else ""
    rest = f"; not scaled: {', '.join(unscaled)}" if unscaled else ""
    detail = f"{total}{how}{rest}; {rate:.1f} it/s x {length.text()}"
    return Expected(length.steps / rate / 3600, COST_MODEL, detail, reference)


@cache
def _published(key: str, papers_dir: Path | None) -> PublishedPaper | None:
    try:
        return load_published(key, papers_dir)
    except InputError:  # a study, or no published tables: no published time
        return None


def published_hours(key: str, recipe: Recipe, papers_dir: Path | None = None) -> tuple[float, str] | None:
    """The paper's own training time for a row the recipe targets (its table's id), where the paper prints one."""
    paper = _published(key, papers_dir)
    if paper is None:
        return None
    targeted = {(target.table, target.row) for target in recipe.targets}
    for table in paper.tables:
        if table.kind != "training_time":
            continue
        for row in table.rows:
            hours = row.metrics.get("training_hours")
            if (table.id, row.id) in targeted and hours is not None:
                return hours, table.id
    return None


@dataclass(frozen=True)
class HoursSetting:
    """Where the runs train, and what is known of their time there."""

    device_type: str  # "cuda", "cpu"
    gpu_name: str | None = None  # the GPU's name (None with "cuda": no GPU here, the committed GPUs' figures serve)
    calibrations: Mapping[TrainingShape, Calibration] = field(default_factory=dict)  # measured here, by shape
    max_steps: int | None = None  # a rehearsal
    full_scale: bool = True  # the paper's recipes (a published time serves them only)
    papers_dir: Path | None = None
    folder: Path | None = None  # the committed measurements (None: ``BENCHMARKS_DIR``)


def expected_hours(key: str, recipe: Recipe, setting: HoursSetting) -> Expected:
    """The expected time of one run of ``recipe`` (in paper ``key``) where ``setting`` says it trains."""
    problem = layout_problem(recipe)
    if problem is None:
        estimate = _measured(recipe, setting)
        if isinstance(estimate, Expected):
            return estimate
        problem = estimate
    else:
        problem = f"its sampler cannot be laid over the split's counts: {problem}"
    published = _published_time(key, recipe, setting)
    if published is not None:
        return published
    published_too = setting.full_scale and setting.device_type == "cuda"  # where a published time would have served
    return Expected(None, UNKNOWN, problem + (", and no published training time" if published_too else ""))


def _measured(recipe: Recipe, setting: HoursSetting) -> Expected | str:
    """The run's hours from its shape timed here or a committed measurement; where neither serves, why."""
    shape, length = training_shape(recipe, setting.device_type), run_length(recipe, setting.max_steps)
    calibration = setting.calibrations.get(shape)
    if calibration is not None:
        return measured_here(length, calibration)
    if setting.device_type != "cuda":
        return (
            f"not measured on the {setting.device_type.upper()}: `--calibrate` times it here (the committed "
            "measurements and the published times are GPUs')"
        )
    reference = _nearest(shape, setting.gpu_name, committed_measurements(setting.folder or BENCHMARKS_DIR))
    if reference is None:
        return "no committed GPU measurement with its shape recorded"
    return from_measurement(shape, length, reference, setting.gpu_name)


def _published_time(key: str, recipe: Recipe, setting: HoursSetting) -> Expected | None:
    """The paper's published time of the run (a full-scale GPU run's), scaled to a rehearsal's steps."""
    published = published_hours(key, recipe, setting.papers_dir)
    if published is None or not setting.full_scale or setting.device_type != "cuda":
        return None
    hours, table = published
    if not setting.max_steps:
        return Expected(hours, PUBLISHED, f"{table}, on its authors' GPU")
    iterations = recipe.training.iterations
    if not iterations:
        return None  # counted in epochs: a rehearsal's steps cannot scale it
    steps = min(setting.max_steps, iterations)
    detail = f"{table}, on its authors' GPU, scaled to {steps:,} of {iterations:,} iterations"
    return Expected(hours * steps / iterations, PUBLISHED, detail)


def measured_here(length: RunLength, calibration: Calibration) -> Expected:
    """A run's hours from its shape's timing here: its steps and its evaluations' embedding passes."""
    training = length.steps * calibration.seconds_per_step
    evaluating = length.evaluations * length.evaluated_images * calibration.seconds_per_evaluated_image
    detail = (
        f"{1 / calibration.seconds_per_step:.1f} it/s x {length.text()} + {length.evaluations} evaluations of "
        f"{length.evaluated_images:,} images at {1 / calibration.seconds_per_evaluated_image:,.0f} images/s"
    )
    return Expected((training + evaluating) / 3600, MEASURED_HERE, detail)
