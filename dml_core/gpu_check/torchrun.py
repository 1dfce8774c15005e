"""The ``torchrun`` part: ``torchrun --standalone --nproc-per-node 1 -m dml_core.cli train`` through one smoke run
(damlrrm's OURS, DataLoader workers on, the device left to the trainer as a torchrun user leaves it), then the
suite's collectives over NCCL on that one GPU (``nccl_probe``: with one process ``dml train`` builds no process
group, so the probe is what reaches NCCL)."""

from __future__ import annotations

import json
import time

from dml_core.gpu_check.children import PYTHON, run_child
from dml_core.gpu_check.part import CheckContext, Outcome, PartFailed
from dml_core.results import load_results

TORCHRUN = [PYTHON, "-m", "torch.distributed.run", "--standalone", "--nproc-per-node", "1"]
SMOKE_RUN = "damlrrm/ours-cub200"
TIMEOUT_SECONDS = 300


def run_torchrun(context: CheckContext) -> Outcome:
    out = context.work_dir / "run"
    started = time.perf_counter()
    train = [
        *TORCHRUN, "-m", "dml_core.cli", "train", SMOKE_RUN, "--smoke", "--set", "data.num_workers=2",
        "--out", str(out), "--data-root", str(context.data_root), "--no-progress",
    ]  # fmt: skip
    run_child(f"torchrun ... dml train {SMOKE_RUN} --smoke", train, context.work_dir / "train.log", TIMEOUT_SECONDS,
              deadline=context.deadline)  # fmt: skip
    results = load_results(out / "results.json")
    figures = {
        "train_seconds_with_start": time.perf_counter() - started,
        "results_device": results.environment.get("device"),
        "world_size": results.world_size,
    }
    if not str(results.environment.get("device", "")).startswith(context.device.type):
        raise PartFailed(f"the run trained on {results.environment.get('device')}, not {context.device.type}", figures)
    probe_out = context.work_dir / "probe.json"
    probe_command = [*TORCHRUN, "-m", "dml_core.gpu_check.nccl_probe", str(probe_out)]
    try:
        run_child("torchrun ... nccl_probe", probe_command, context.work_dir / "probe.log", TIMEOUT_SECONDS,
                  deadline=context.deadline)  # fmt: skip
    except PartFailed as failure:  # name the collectives that failed where the probe got to write them
        checks = json.loads(probe_out.read_text(encoding="utf-8"))["checks"] if probe_out.exists() else {}
        errors = [f"{name}: {state}" for name, state in checks.items() if state.startswith("error")]
        raise PartFailed("; ".join(errors) or failure.reason, {**figures, "collectives": checks}) from None
    figures["collectives"] = json.loads(probe_out.read_text(encoding="utf-8"))
    probe = figures["collectives"]
    expected_backend = "nccl" if context.device.type == "cuda" else "gloo"
    if probe["backend"] != expected_backend:
        raise PartFailed(f"the collectives ran over {probe['backend']}, expected {expected_backend}", figures)
    return Outcome(
        f"dml train on {figures['results_device']} under torchrun; {len(probe['checks'])} collective checks over "
        f"{probe['backend']}",
        figures,
    )
