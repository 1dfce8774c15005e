"""The ``mini`` part: one paper's mini tier on the GPU (``dml reproduce KEY --mini --seeds 0``: its headline runs
from ``reproduce/KEY/mini.yaml``, seed 0), with each run's gain in R@1 over its untrained evaluation and the time.

The paper is cgml: both of its runs learn well above the tier's bar on the CPU page (tables/mini/cgml.md; its
figures and times: docs/tiers.md), and its tier is among the shortest. A run on the GPU that gains less than
``MIN_GAIN`` points has not trained as the CPU does (the mini recipes are fp32 on every device), which the check
reports as a failure; the numbers themselves differ from the page's by float order, so they are reported, not
compared.
"""

from __future__ import annotations

import time
from collections.abc import Sequence

from dml_core.gpu_check.children import PYTHON, run_child
from dml_core.gpu_check.part import CheckContext, Outcome, PartFailed
from dml_core.tables.pages.mini import MiniRow, mini_results, summarize_runs

PAPER = "cgml"
MIN_GAIN = 5.0
TIMEOUT_SECONDS = 480


def weak_runs(rows: Sequence[MiniRow]) -> list[str]:
    """``run +gain`` of each run that gained less than ``MIN_GAIN`` R@1 points (or no finite number)."""
    return [f"{row.run_name} {row.gain:+.1f}" for row in rows if not row.gain >= MIN_GAIN]


def run_mini(context: CheckContext) -> Outcome:
    roots = {name: context.work_dir / name for name in ("runs", "results", "tables")}
    command = [
        PYTHON, "-m", "dml_core.cli", "reproduce", PAPER, "--mini", "--seeds", "0", "--device", str(context.device),
        "--data-root", str(context.data_root), "--no-progress",
        *(option for name, root in roots.items() for option in (f"--{name}", str(root))),
    ]  # fmt: skip
    started = time.perf_counter()
    run_child(f"dml reproduce {PAPER} --mini", command, context.work_dir / "mini.log", TIMEOUT_SECONDS,
              deadline=context.deadline)  # fmt: skip
    seconds = time.perf_counter() - started
    results = mini_results(roots["results"], PAPER)
    rows = summarize_runs(results)
    figures = {
        "paper": PAPER,
        "seconds": seconds,
        "devices": sorted({str(item.environment.get("device")) for item in results}),
        "runs": {
            row.run_name: {
                "untrained_r1": row.untrained_r1[0], "trained_r1": row.trained_r1[0], "gain": row.gain,
                "train_seconds": row.train_seconds[0], "iterations": row.iterations,
            }
            for row in rows
        },
    }  # fmt: skip
    if not rows:
        raise PartFailed(f"no mini results of {PAPER} were written", figures)
    if any(not device.startswith(context.device.type) for device in figures["devices"]):
        raise PartFailed(f"runs trained on {figures['devices']}, not {context.device.type}", figures)
    weak = weak_runs(rows)
    if weak:
        raise PartFailed(f"runs that gained under {MIN_GAIN:g} R@1 points on the GPU: {', '.join(weak)}", figures)
    gains = ", ".join(f"{row.run_name} {row.gain:+.1f}" for row in rows)
    return Outcome(f"{PAPER} seed 0: {gains} R@1 in {seconds:.0f} s", figures)
