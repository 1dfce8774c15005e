"""The plan ``dml reproduce`` prints before its first step: the runs with their expected hours and their basis
(``expected_hours``; the shapes timed here, the committed measurements and the cost model they rest on, the sums by
basis), each input and its state, and the disk each stage needs against the free space where it goes. Days of GPU
time and tens of GB of disk should be known before they are spent, not found out half-way."""

from __future__ import annotations

import os
from collections import defaultdict
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field, replace
from pathlib import Path

import torch

from dml_core.atomic_io import free_disk_bytes, nearest_existing
from dml_core.data.index import index_path
from dml_core.output_paths import data_root as resolve_data_root
from dml_core.pipeline.image_cache import estimated_cache_bytes
from dml_core.readable import readable_bytes, readable_duration
from dml_core.recipes.settings import Recipe
from dml_core.runner.calibration import Calibration, calibrate_shapes
from dml_core.runner.disk_needs import (
    DATASET_BYTES,
    cache_lower_bound,
    checkpoint_bytes,
    results_bytes,
    training_images,
)
from dml_core.runner.eta import counted
from dml_core.runner.expected_hours import (
    BASES,
    COST_MODEL,
    MEASURED_HERE,
    Expected,
    HoursSetting,
    Measurement,
    expected_hours,
    other_device,
)
from dml_core.runner.linear import LinearRun, missing_uci_data
from dml_core.runner.preflight import MISSING, TO_BUILD, run_inputs
from dml_core.runner.training_shape import TrainingShape
from dml_core.tier import Tier
from dml_core.training.checkpoint import keeps_finished_checkpoint
from dml_core.training.distributed import Process
from dml_core.training.run_description import PlannedRun


@dataclass(frozen=True)
class PlanSetting:
    """Where and how the runs train, as the plan reports them."""

    key: str
    tier: Tier
    data_root: Path | None
    runs_root: Path
    results_root: Path
    device_text: str  # the device line (``device_choice.describe_device``)
    device_type: str  # "cuda", "cpu": which pipeline the runs take
    gpu_name: str | None  # the GPU's name, for the measurement of its device class (None: the CPU or unknown)
    max_steps: int | None = None  # a rehearsal
    papers_dir: Path | None = None
    calibrations: Mapping[TrainingShape, Calibration] = field(default_factory=dict)  # timed here, by shape
    timing_notes: Sequence[str] = ()  # what could not be timed here although asked, and why


@dataclass
class DiskStage:
    """The bytes one stage writes, where, and what makes them up."""

    name: str
    where: Path
    size: int = 0
    at_least: bool = False  # a lower bound (a cache of shorter-side resizes, estimated without the images)
    parts: list[str] = field(default_factory=list)
    unknown: list[str] = field(default_factory=list)  # items without a figure

    def line(self) -> str:
        size = f"{'at least ' if self.at_least else ''}{readable_bytes(self.size)}"
        unknown = f"; not counted: {', '.join(self.unknown)} (no figure)" if self.unknown else ""
        return f"{self.name}: {size} in {self.where} ({'; '.join(self.parts) or 'nothing new'}{unknown})"


def plan_lines(
    setting: PlanSetting, plans: Sequence[PlannedRun], to_train: Sequence[bool], linear_runs: Sequence[LinearRun]
) -> list[str]:
    """The plan, one line each (indented under its heading)."""
    training = [plan for plan, train_it in zip(plans, to_train, strict=True) if train_it]
    lines = [f"{setting.key}: the plan ({_tier_text(setting)}), before the first step"]
    lines.append(f"  device: {setting.device_text}")
    lines += _run_lines(setting, plans, to_train, linear_runs)
    lines += _input_lines(setting, training, linear_runs)
    lines += _disk_lines(setting, training)
    return lines


def with_timings(setting: PlanSetting, device: torch.device | None, recipes: Sequence[Recipe]) -> PlanSetting:
    """``setting`` with the training shapes of ``recipes`` timed on ``device`` (``calibration``), or saying why
    they cannot be."""
    if device is None or device.type != setting.device_type:
        why = "the runs train where each job runs" if device is None else "no GPU here (--device cpu times the CPU)"
        return replace(setting, timing_notes=(f"nothing timed: {why}",))
    if Process.from_environment().active:
        return replace(setting, timing_notes=("nothing timed: under torchrun (the shapes are timed in one process)",))
    name = setting.gpu_name or f"the CPU, {torch.get_num_threads()} threads"
    timed, failed = calibrate_shapes(recipes, device, name)
    notes = tuple(f"{shape.text()}: not timed ({why})" for shape, why in failed.items())
    return replace(setting, calibrations=timed, timing_notes=notes)


def _tier_text(setting: PlanSetting) -> str:
    if setting.max_steps:
        return f"a rehearsal: full-scale recipes cut to {counted(setting.max_steps, 'step')}, results never in tables"
    return {Tier.FULL: "full scale", Tier.SMOKE: "smoke tier", Tier.MINI: "mini tier"}[setting.tier]


def _run_lines(
    setting: PlanSetting, plans: Sequence[PlannedRun], to_train: Sequence[bool], linear_runs: Sequence[LinearRun]
) -> list[str]:
    finished = len(plans) - sum(to_train)
    lines = [f"  runs: {sum(to_train)} to train, {finished} finished earlier, {len(linear_runs)} linear"]
    hours = HoursSetting(
        setting.device_type, setting.gpu_name, setting.calibrations, setting.max_steps, setting.tier == Tier.FULL,
        setting.papers_dir,
    )  # fmt: skip
    seeds: dict[str, list[int]] = defaultdict(list)
    expected: dict[str, Expected] = {}
    for plan, train_it in zip(plans, to_train, strict=True):
        if not train_it:
            continue
        name = plan.recipe.run_name
        seeds[name].append(plan.recipe.training.seed)
        if name not in expected:
            expected[name] = expected_hours(setting.key, plan.recipe, hours)
    labels: dict[Measurement, str] = {}
    for name, run_seeds in seeds.items():
        estimate, listed = expected[name], ", ".join(map(str, run_seeds))
        each = " each" if len(run_seeds) > 1 and estimate.hours is not None else ""
        label = labels.setdefault(estimate.reference, f"[{len(labels) + 1}]") if estimate.reference else None
        lines.append(f"    {name} seed {listed}: {estimate.duration()}{each} ({estimate.source(label)})")
    for run in linear_runs:
        lines.append(f"    {run.name}: linear (CPU)")
    lines += _timing_lines(setting)
    if labels:
        lines.append("  committed measurements the hours rest on:")
        for measurement, label in labels.items():
            caveat = other_device(measurement, setting.gpu_name)
            lines.append(f"    {label} {measurement.text()}{'; ' + caveat if caveat else ''}")
    if any(estimate.basis == COST_MODEL for estimate in expected.values()):
        lines.append(f"    the cost model: {COST_MODEL_RULE}")
    return lines + _total_lines(seeds, expected)


COST_MODEL_RULE = (
    "a step's seconds scale with the backbone's forward FLOPs per image times the images per step, and double "
    "from bf16 to fp32 (assumed: TF32 convolutions at half bf16's tensor-core rate; less where the host bounds the "
    "step); the head, pipeline and loss are not scaled"
)


def _timing_lines(setting: PlanSetting) -> list[str]:
    """What was timed here before the runs (``calibration``), and why nothing was where it was asked for."""
    if not setting.calibrations and not setting.timing_notes:
        return []
    lines = [
        "  timed here on synthetic batches, before the first run (the data pipeline and the evaluations' metrics "
        "not timed):"
    ]
    lines += [f"    {shape.text()}: {calibration.text()}" for shape, calibration in setting.calibrations.items()]
    return lines + [f"    {note}" for note in setting.timing_notes]


def _total_lines(seeds: dict[str, list[int]], expected: dict[str, Expected]) -> list[str]:
    """The expected time of the runs whose time is known, by basis (never one sum of unlike figures unsaid), and
    the runs whose time is unknown."""
    if not seeds:
        return []
    by_basis: dict[str, list[float]] = defaultdict(list)
    unknown = []
    for name, run_seeds in seeds.items():
        estimate = expected[name]
        if estimate.hours is None:
            unknown += [name] * len(run_seeds)
        else:
            by_basis[estimate.basis] += [estimate.hours] * len(run_seeds)
    lines = []
    if by_basis:
        total = sum(sum(hours) for hours in by_basis.values())
        known = sum(len(hours) for hours in by_basis.values())
        parts = [
            f"{readable_duration(sum(hours) * 3600)} {BASES[basis]} ({counted(len(hours), 'run')})"
            for basis, hours in sorted(by_basis.items(), key=lambda item: list(BASES).index(item[0]))
        ]
        evaluations = (
            "evaluations included"
            if set(by_basis) == {MEASURED_HERE}
            else "evaluations counted only where measured here"
        )
        lines.append(
            f"  expected time: {readable_duration(total * 3600)} for {counted(known, 'run')} = {' + '.join(parts)}; "
            f"{evaluations}"
        )
    if unknown:
        names = ", ".join(dict.fromkeys(unknown))
        lines.append(f"  unknown time: {counted(len(unknown), 'run')} ({names}): why in their lines")
    return lines


def _input_lines(setting: PlanSetting, training: Sequence[PlannedRun], linear_runs: Sequence[LinearRun]) -> list[str]:
    states: dict[str, str] = {}
    for plan in training:
        for needed in run_inputs(plan, setting.data_root, setting.device_type):
            states.setdefault(needed.what, needed.state)
    for run in linear_runs:
        problem = missing_uci_data(run, setting.data_root)
        states.setdefault(f"UCI data set {run.plan.dataset}", MISSING if problem else "present")
    if not states:
        return []
    return ["  inputs:"] + [f"    {what}: {state}" for what, state in states.items()]


def _disk_lines(setting: PlanSetting, training: Sequence[PlannedRun]) -> list[str]:
    if not training:
        return []
    stages = _disk_stages(setting, training)
    lines = ["  disk:"] + [f"    {stage.line()}" for stage in stages]
    by_disk: dict[int, list[DiskStage]] = defaultdict(list)
    for stage in stages:
        by_disk[_file_system(stage.where)].append(stage)
    for on_disk in by_disk.values():
        needed = sum(stage.size for stage in on_disk)
        free = free_disk_bytes(on_disk[0].where)
        places = ", ".join(dict.fromkeys(str(stage.where) for stage in on_disk))
        verdict = "fits" if needed < free else "DOES NOT FIT: free space there or choose other folders"
        sizes = f"{readable_bytes(needed)} needed, {readable_bytes(free)} free"
        lines.append(f"    on the disk of {places}: {sizes}: {verdict}")
    return lines


def _disk_stages(setting: PlanSetting, training: Sequence[PlannedRun]) -> list[DiskStage]:
    data = resolve_data_root(setting.data_root)
    archives, extracted = DiskStage("archives", data), DiskStage("extracted files", data)
    cache = DiskStage("uint8 cache", data)
    checkpoints, results = DiskStage("checkpoints", setting.runs_root), DiskStage("results", setting.results_root)
    seen: set = set()
    for plan in training:
        spec, recipe = plan.dataset, plan.recipe
        root = resolve_data_root(setting.data_root, recipe.data.root)
        if not spec.generated and not index_path(root / spec.name).is_file() and spec.name not in seen:
            seen.add(spec.name)
            figures = DATASET_BYTES.get(spec.name)
            if figures is None:
                archives.unknown.append(spec.name)
                extracted.unknown.append(spec.name)
            else:
                archives.size += figures.archives
                extracted.size += figures.extracted
                archives.parts.append(f"{spec.name} {readable_bytes(figures.archives)}")
                extracted.parts.append(f"{spec.name} {readable_bytes(figures.extracted)}, estimated as its archives")
        for needed in run_inputs(plan, setting.data_root, setting.device_type):
            if needed.what.startswith("uint8 cache") and needed.state == TO_BUILD and needed.what not in seen:
                seen.add(needed.what)
                _add_cache(cache, plan, root)
    _add_per_run(setting, training, checkpoints, results)
    return [archives, extracted, cache, checkpoints, results]


def _add_cache(stage: DiskStage, plan: PlannedRun, root: Path) -> None:
    spec, config = plan.dataset, plan.recipe.data.transforms
    what = f"{spec.name}/train {config.resize_mode} {config.resize}"
    if index_path(root / spec.name).is_file():  # exact: the image headers and torchvision's resize rule
        images, size = estimated_cache_bytes(spec, root, "train", config.resize_mode, config.resize)
    else:
        images = training_images(spec)
        size = cache_lower_bound(images, config.resize_mode, config.resize)
        stage.at_least |= config.resize_mode != "squash"
    stage.size += size
    stage.parts.append(f"{what}: {images:,} images")


def _add_per_run(
    setting: PlanSetting, training: Sequence[PlannedRun], checkpoints: DiskStage, results: DiskStage
) -> None:
    sizes: dict[tuple, int] = {}
    each = []
    for plan in training:
        recipe = plan.recipe
        shape = (recipe.model.model_dump_json(), recipe.optimizer.name, recipe.optimizer.momentum)
        if shape not in sizes:
            sizes[shape] = checkpoint_bytes(recipe)
        each.append(sizes[shape])
        results.size += results_bytes(plan.dataset)
    kept = setting.max_steps is None and keeps_finished_checkpoint(setting.tier)
    checkpoints.size = sum(each) if kept else max(each)
    low, high = readable_bytes(min(each)), readable_bytes(max(each))
    span = low if low == high else f"{low}-{high}"
    if kept:
        checkpoints.parts.append(f"{counted(len(each), 'run')} x {span}, the model and optimiser state, kept")
    else:
        checkpoints.parts.append(f"one at a time ({span}), removed once its run ends")
    results.parts.append(f"{counted(len(training), 'run')}: results files and their per-query terms")


def _file_system(path: Path) -> int:
    """The device number of the file system that holds ``path`` (or would: its nearest existing parent)."""
    return os.stat(nearest_existing(path)).st_dev
