"""How long a run is expected to train, and on what that rests: the committed GPU measurement of its recipe on this
device class (``tables/benchmarks/training-*.json``: iterations per second end to end) scaled to the recipe's
iterations, else the paper's own published training time (a ``training_time`` table row the run targets), else
unknown, said as such. Evaluations are not in either figure."""

from __future__ import annotations

import json
import math
from dataclasses import dataclass
from functools import cache
from pathlib import Path

from dml_core.errors import InputError
from dml_core.output_paths import REPOSITORY_ROOT, device_slug
from dml_core.pipeline.choice import wants_cache
from dml_core.published import PublishedPaper, load_published
from dml_core.recipes.settings import Recipe
from dml_core.tables.pages.timing import readable_duration

BENCHMARKS_DIR = REPOSITORY_ROOT / "tables" / "benchmarks"


@dataclass(frozen=True)
class Expected:
    """A run's expected training time in hours (None: unknown) and its source, in words."""

    hours: float | None
    source: str

    def duration(self) -> str:
        return readable_duration(self.hours * 3600) if self.hours is not None else "unknown"


@dataclass(frozen=True)
class Measured:
    """A recipe's measured training speed on one device class."""

    iterations_per_second: float
    pipeline: str
    device: str
    file: str


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


def measured_speed(key: str, recipe: Recipe, device_name: str | None, folder: Path = BENCHMARKS_DIR) -> Measured | None:
    """The committed end-to-end speed of ``recipe`` (by id, in paper ``key``) on the device class of ``device_name``
    (a GPU's name; None: the CPU), on the pipeline the run takes there; None where none was measured."""
    pipeline = "cache" if device_name and wants_cache(recipe.data, "cuda") else "pil"
    for report in _benchmark_reports(folder):
        if device_slug(report.get("device")) != device_slug(device_name):
            continue
        record = report["papers"].get(key)
        if not isinstance(record, dict) or record.get("recipe") != recipe.id:
            continue
        figures = record.get("pipelines", {}).get(pipeline, {})
        rate = figures.get("end_to_end_iterations_per_second")
        if isinstance(rate, int | float) and rate > 0 and math.isfinite(rate):
            return Measured(float(rate), pipeline, str(report["device"]), report["file"])
    return None


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


def expected_hours(
    key: str, recipe: Recipe, device_name: str | None, steps: int | None = None, papers_dir: Path | None = None
) -> Expected:
    """The expected training time of one run of ``recipe`` on the device ``device_name`` (None: the CPU), for
    ``steps`` iterations (None: the recipe's; a rehearsal's fewer scale either figure), with its source."""
    iterations = recipe.training.iterations  # None: counted in epochs, which the figures cannot scale
    steps = min(steps, iterations) if steps and iterations else steps or iterations
    speed = measured_speed(key, recipe, device_name) if recipe.variant == "" else None  # measured at the defaults
    if speed is not None and steps:
        return Expected(
            steps / speed.iterations_per_second / 3600,
            f"measured: {speed.iterations_per_second:.1f} it/s end to end on {speed.device}, {speed.pipeline} "
            f"pipeline ({speed.file}) x {steps:,} iterations",
        )
    published = published_hours(key, recipe, papers_dir)
    where = device_name or "the CPU"
    if published is not None and (iterations or not steps):  # a rehearsal of an epoch count cannot scale it
        hours, table = published
        part = f", scaled to {steps:,} of {iterations:,} iterations" if steps and steps < iterations else ""
        return Expected(
            hours * (steps / iterations if steps else 1.0),
            f"the paper's published training time, {table}, on its authors' GPU{part}; none measured on {where}",
        )
    return Expected(None, f"no measurement of {recipe.id} on {where} and no published training time")
