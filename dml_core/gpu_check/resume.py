"""The ``resume`` part: ``dml train`` of one small run on the GPU, killed with SIGKILL after its first checkpoint and
resumed with ``--resume``, ends with the parameters of the same run trained without a stop.

The run (``RESUME_RECIPE``) has every kind of state a resume must restore: SGD's momentum, the schedule, the
sampler's place, DataLoader workers, the margin loss's learned betas and its sampling generator on the device.
"""

from __future__ import annotations

import copy
import os
import signal
import subprocess
import time
from pathlib import Path

import torch
import yaml

from dml_core.errors import InputError
from dml_core.gpu_check.children import PYTHON, child_environment, run_child
from dml_core.gpu_check.parity import relative_difference
from dml_core.gpu_check.part import CheckContext, Outcome, PartFailed, PartStopped
from dml_core.results import load_results
from dml_core.training.checkpoint import load_checkpoint

RESUME_RECIPE = {
    "id": "gpu-check-resume",
    "paper": "cgml",
    "targets": [{"table": "table3", "row": "triplet-cub200"}],
    "data": {
        "dataset": "embedded",
        "num_workers": 2,
        "transforms": {"resize": 40, "crop_size": 32, "train_crop": "random_crop"},
    },
    "model": {"backbone": "bn_inception", "weights": "random", "embedding_dim": 16},
    "loss": {"name": "margin", "params": {"learn_beta": True}},
    "sampler": {"name": "pk", "params": {"classes_per_batch": 4, "images_per_class": 2}},
    "optimizer": {"name": "sgd", "lr": 1e-2, "momentum": 0.9},
    "schedule": {"name": "step", "step_size": 60, "gamma": 0.5},
    "training": {"iterations": 200, "eval_every": 200, "checkpoint_every": 20, "eval_batch_size": 256},
    "evaluation": {"recall_ks": [1, 2], "kmeans_iterations": 5},
}
RESUME_RTOL = 1e-2  # where two uninterrupted runs differ: far below one step more or less (docs/gpu.md)
KILL_DEADLINE_SECONDS = 300


def _train_command(recipe_path: Path, out: Path, device: torch.device, data_root: Path) -> list[str]:
    return [
        PYTHON, "-m", "dml_core.cli", "train", str(recipe_path), "--out", str(out), "--device", str(device),
        "--data-root", str(data_root), "--no-progress",
    ]  # fmt: skip


def _checkpoint_iteration(path: Path) -> int | None:
    try:
        state = load_checkpoint(path)
    except InputError:  # not written yet
        return None
    return None if state["finished"] else state["iteration"]


def train_killed_after_first_checkpoint(command: list[str], out: Path, check_deadline: float | None = None) -> int:
    """Start ``command``, SIGKILL its process group (its DataLoader workers too) as soon as its checkpoint holds an
    unfinished iteration; return that iteration. The checkpoint is read only when a new one replaces it (a read
    costs CPU time the run needs). At ``check_deadline`` (the check's time limit) it is killed all the same and
    ``PartStopped`` raised."""
    checkpoint = out / "checkpoint.pt"
    out.mkdir(parents=True, exist_ok=True)
    with open(out.parent / f"{out.name}-killed.log", "w", encoding="utf-8") as log:
        process = subprocess.Popen(
            command, env=child_environment(), stdout=log, stderr=subprocess.STDOUT, start_new_session=True
        )
        own_deadline = time.monotonic() + KILL_DEADLINE_SECONDS
        deadline = own_deadline if check_deadline is None else min(own_deadline, check_deadline)
        iteration, seen = None, None
        try:
            while process.poll() is None and time.monotonic() < deadline:
                version = _file_version(checkpoint)
                if version not in (None, seen):
                    seen, iteration = version, _checkpoint_iteration(checkpoint)
                    if iteration is not None:
                        break
                time.sleep(0.02)
        finally:
            if process.poll() is None:
                os.killpg(process.pid, signal.SIGKILL)
            process.wait()
    if iteration is None and deadline < own_deadline and time.monotonic() >= deadline:
        raise PartStopped("time limit reached before the run to kill wrote its first checkpoint")
    if iteration is None:
        raise PartFailed(f"the run to kill ended (exit {process.returncode}) before an unfinished checkpoint was seen")
    return iteration


def _file_version(path: Path) -> tuple[int, int] | None:
    """Which file is at ``path`` (inode, modification time): an atomic replace gives a new one."""
    try:
        stat = path.stat()
    except FileNotFoundError:
        return None
    return stat.st_ino, stat.st_mtime_ns


def parameter_differences(reference: Path, other: Path) -> dict[str, float]:
    """Every floating tensor of the model and loss state in two checkpoints: its relative difference."""
    first, second = load_checkpoint(reference), load_checkpoint(other)
    return {
        f"{part}.{name}": relative_difference(second[part][name], value)
        for part in ("model", "loss")
        for name, value in first[part].items()
        if isinstance(value, torch.Tensor) and value.is_floating_point()
    }


def _worst(differences: dict[str, float]) -> str:
    name = max(differences, key=differences.get)
    return f"{differences[name]:.1e} ({name})"


def resume_check(
    recipe: dict, work_dir: Path, device: torch.device, data_root: Path, deadline: float | None = None
) -> Outcome:
    """Train ``recipe`` without a stop and killed-then-resumed on ``device``; compare the final parameters (each
    child stopped at ``deadline``, the check's time limit).

    Equal means bitwise equal where the run is deterministic: when the resumed run differs at all, a second
    uninterrupted run is trained; if it equals the first, the resumed one is wrong. If the two differ too
    (non-deterministic kernels), every tensor of the model's and the loss's state must stay within ``RESUME_RTOL``
    relative (as in the parity part), and the two runs' own difference is reported beside it."""
    recipe_path = work_dir / "recipe.yaml"
    work_dir.mkdir(parents=True, exist_ok=True)
    recipe_path.write_text(yaml.safe_dump(copy.deepcopy(recipe)), encoding="utf-8")
    reference, resumed = work_dir / "reference", work_dir / "resumed"
    run_child("the uninterrupted run", _train_command(recipe_path, reference, device, data_root),
              work_dir / "reference.log", timeout=KILL_DEADLINE_SECONDS, deadline=deadline)  # fmt: skip
    command = _train_command(recipe_path, resumed, device, data_root)
    killed_at = train_killed_after_first_checkpoint(command, resumed, deadline)
    run_child("the resumed run", [*command, "--resume"], work_dir / "resumed.log", timeout=KILL_DEADLINE_SECONDS,
              deadline=deadline)  # fmt: skip
    results = load_results(resumed / "results.json")
    figures = {
        "killed_at_iteration": killed_at,
        "iterations": results.timing.iterations,
        "device": results.environment.get("device"),
        "resumed_runs": results.timing.resumed_runs,
    }
    if results.timing.resumed_runs != 1:
        raise PartFailed(f"the results file counts {results.timing.resumed_runs} resumes, expected 1", figures)
    differences = parameter_differences(reference / "checkpoint.pt", resumed / "checkpoint.pt")
    figures["resumed_vs_reference_max_rel"] = max(differences.values())
    if not any(differences.values()):
        return Outcome(f"killed at {killed_at}, resumed: parameters bitwise equal", {**figures, "equal": "bitwise"})
    second = work_dir / "reference-2"
    run_child("the second uninterrupted run", _train_command(recipe_path, second, device, data_root),
              work_dir / "reference-2.log", timeout=KILL_DEADLINE_SECONDS, deadline=deadline)  # fmt: skip
    noise = parameter_differences(reference / "checkpoint.pt", second / "checkpoint.pt")
    figures["two_uninterrupted_runs_max_rel"] = max(noise.values())
    if not any(noise.values()):
        raise PartFailed(f"the run is deterministic here, yet the resumed one differs: {_worst(differences)}", figures)
    if max(differences.values()) > RESUME_RTOL:
        raise PartFailed(
            f"resumed parameters differ by {_worst(differences)} > {RESUME_RTOL:g} (two uninterrupted runs: "
            f"{_worst(noise)})",
            figures,
        )
    return Outcome(
        f"killed at {killed_at}, resumed: within {RESUME_RTOL:g} (max {_worst(differences)}; "
        f"not bitwise reproducible here)",
        {**figures, "equal": f"within {RESUME_RTOL:g} relative"},
    )


def run_resume(context: CheckContext) -> Outcome:
    return resume_check(RESUME_RECIPE, context.work_dir, context.device, context.data_root, context.deadline)
