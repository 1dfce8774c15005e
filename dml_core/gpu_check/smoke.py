"""The ``smoke`` part: the smoke tier of all five papers on the GPU, on both data pipelines, each (paper, pipeline)
in a process of its own that trains its runs one after the other with DataLoader workers (``smoke_tier``).

The whole tiers do not fit the check's one device call, so the PIL pipeline trains one run per distinct code path
of each paper and the cache pipeline the first ``CACHE_RUNS_PER_PAPER`` runs of each (``smoke_jobs``), several
processes side by side, each on a share of the CPU cores. ``python3 -m dml_core.gpu_check.smoke_tier KEY`` trains
a whole tier.
"""

from __future__ import annotations

import json
import os
import time
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path

from dml_core.data.prepare import ensure_generated
from dml_core.data.registry import get_spec
from dml_core.gpu_check.children import PYTHON, run_child
from dml_core.gpu_check.part import CheckContext, Outcome, PartFailed, PartStopped
from dml_core.gpu_check.smoke_tier import result_devices
from dml_core.output_paths import RECIPES_DIR
from dml_core.recipes.compose import RunDefinition
from dml_core.runner.plan import paper_runs
from dml_core.vocabulary import PAPER_KEYS

CACHE_RUNS_PER_PAPER = 3
LOADER_WORKERS = 2
TIMEOUT_SECONDS = 300


@dataclass(frozen=True)
class SmokeJob:
    paper: str
    pipeline: str
    only: tuple[str, ...] = ()  # run ids; empty: the whole tier

    @property
    def name(self) -> str:
        return f"{self.paper}/{self.pipeline}"


def _numbers_blanked(tree):
    """The tree with every number replaced by ``#``: what is left (names, modes, switches) selects the code.

    >>> _numbers_blanked({"loss": {"name": "triplet", "margin": 0.2, "mine": [1, True]}})
    {'loss': {'name': 'triplet', 'margin': '#', 'mine': ['#', True]}}
    """
    if isinstance(tree, dict):
        return {key: _numbers_blanked(value) for key, value in tree.items()}
    if isinstance(tree, list):
        return [_numbers_blanked(value) for value in tree]
    return "#" if isinstance(tree, int | float) and not isinstance(tree, bool) else tree


def code_path(run: RunDefinition) -> str:
    """The run's computation (default readings) with its numbers blanked and without the dataset's name or the
    readings (each reading's effect is in the settings it sets): two runs with one code path run the same code."""
    tree = run.recipe().computation()
    tree.pop("readings", None)
    tree["data"].pop("dataset", None)
    return json.dumps(_numbers_blanked(tree), sort_keys=True)


def distinct_code_paths(runs: list[RunDefinition]) -> tuple[str, ...]:
    """The id of the first run (by id) of each code path."""
    first: dict[str, str] = {}
    for run in runs:
        first.setdefault(code_path(run), run.id)
    return tuple(first.values())


def smoke_jobs(recipes_dir: Path = RECIPES_DIR) -> list[SmokeJob]:
    """Per paper: one run per code path on "pil", the first runs (by id) on "cache"."""
    jobs = []
    for key in PAPER_KEYS:
        deep, _ = paper_runs(recipes_dir, key)
        jobs.append(SmokeJob(key, "pil", distinct_code_paths(deep)))
        jobs.append(SmokeJob(key, "cache", tuple(run.id for run in deep[:CACHE_RUNS_PER_PAPER])))
    return jobs


def side_by_side(jobs: int, cores: int | None = None) -> tuple[int, int]:
    """How many jobs run at once (one per two cores, at least one) and the CPU threads each gets.

    >>> side_by_side(10, 16), side_by_side(10, 2), side_by_side(3, 64)
    ((8, 2), (1, 2), (3, 21))
    """
    cores = cores or os.cpu_count() or 1
    at_once = max(1, min(jobs, cores // 2))
    return at_once, max(1, cores // at_once)


def _run_job(job: SmokeJob, context: CheckContext, threads: int) -> dict:
    out = context.work_dir / job.paper / job.pipeline
    command = [
        PYTHON, "-m", "dml_core.gpu_check.smoke_tier", job.paper, "--pipeline", job.pipeline, "--out", str(out),
        "--data-root", str(context.data_root), "--device", str(context.device),
        "--loader-workers", str(LOADER_WORKERS), *(["--only", *job.only] if job.only else []),
    ]  # fmt: skip
    started = time.perf_counter()
    env = {"OMP_NUM_THREADS": str(threads)}
    try:
        run_child(f"the {job.name} smoke tier", command, out / "smoke.log", TIMEOUT_SECONDS, env=env,
                  deadline=context.deadline)  # fmt: skip
    except PartFailed as failure:
        return {"error": failure.reason, "seconds": time.perf_counter() - started}
    except PartStopped as stopped:  # the time limit: what it trained is in its results folder
        devices = result_devices(out / "results", job.paper)
        return {"stopped": stopped.reason, "deep_runs": sum(devices.values()), "devices": dict(devices),
                "seconds": time.perf_counter() - started}  # fmt: skip
    summary = json.loads((out / "summary.json").read_text(encoding="utf-8"))
    return {**summary, "seconds": time.perf_counter() - started, "runs": "whole tier" if not job.only else job.only}


def job_problems(name: str, record: dict, device_type: str) -> list[str]:
    """What is wrong with one (paper, pipeline) job's record: an error, a failed run, fewer than two runs trained
    in its process, a run on another device (of a job the time limit stopped: only the device of what it trained).
    """
    if "error" in record:
        return [record["error"]]
    problems = [f"{name}: {run} failed: {why}" for run, why in record.get("failed", {}).items()]
    if record["deep_runs"] < 2 and "stopped" not in record:
        problems.append(f"{name}: {record['deep_runs']} run(s) trained in its process, expected at least 2")
    elsewhere = {device: n for device, n in record["devices"].items() if not device.startswith(device_type)}
    if elsewhere:
        problems.append(f"{name}: runs trained on {elsewhere}, not {device_type}")
    return problems


def run_smoke(context: CheckContext) -> Outcome:
    ensure_generated(get_spec("embedded"), context.data_root)  # once, before the processes that read it start
    jobs = smoke_jobs()
    at_once, threads = side_by_side(len(jobs))
    with ThreadPoolExecutor(max_workers=at_once) as pool:
        done = pool.map(lambda job: _run_job(job, context, threads), jobs)
        records = dict(zip((job.name for job in jobs), done, strict=True))
    figures = {"jobs": records, "side_by_side": at_once, "threads_each": threads, "loader_workers": LOADER_WORKERS}
    problems = [line for name, record in records.items() for line in job_problems(name, record, context.device.type)]
    if problems:
        raise PartFailed(f"{len(problems)} problem(s): " + "; ".join(problems), figures)
    stopped = [job.name for job in jobs if "stopped" in records[job.name]]
    if stopped:
        trained = sum(record["deep_runs"] for record in records.values())
        raise PartStopped(
            f"{len(jobs) - len(stopped)} of {len(jobs)} (paper, pipeline) jobs finished with no failure, {trained} "
            f"runs trained; stopped: {', '.join(stopped)}",
            figures,
        )
    runs = {
        pipeline: sum(records[job.name]["deep_runs"] for job in jobs if job.pipeline == pipeline)
        for pipeline in ("pil", "cache")
    }
    return Outcome(
        f"{runs['pil']} runs pil (one per code path) + {runs['cache']} cache ({CACHE_RUNS_PER_PAPER}/paper), "
        "none failed",
        figures,
    )
