"""bf16 against fp32 with the CPU standing in for CUDA: what the ``precision`` reading's other value does to the first
steps of each paper's main recipe at the mini tier's scale, evidence for the reading's default until a GPU measures
the real thing (the GPU check's ``precision`` part, at paper scale).

The trainer autocasts only on CUDA; here the CPU's bf16 autocast takes its place (``training.step.autocast``
replaced in this process only). Both autocasts run the convolutions and linear layers in bf16 and hand their outputs
on in bf16, so the rounding is of the same kind; their op lists and kernels differ in detail, hence "stand-in". Per
recipe (``mini_version`` of the main recipe: the generated glyphs, random weights, the narrowed backbone), the GPU
check's own measurement (``gpu_check.experiments.precision.recipe_precision_figures``): ``RECIPE_STEPS`` steps
from one start on the first batch in fp32, again under bf16, on it nudged by ``NUDGE`` in fp32, and on the second
batch in fp32; the perturbation of the trainable parameters' change by bf16, by the nudge and by the other batch,
relative to the fp32 change, and the ratios of bf16's to the other two.

    python -m tests.benchmarks.precision_cpu                 # writes tables/benchmarks/precision-cpu.json
    python -m tests.benchmarks.precision_cpu --out OTHER.json --data-root DIR
"""

from __future__ import annotations

import argparse
import tempfile
from pathlib import Path

import torch

from dml_core import provenance
from dml_core.atomic_io import atomic_write_json
from dml_core.gpu_check.experiments import precision
from dml_core.gpu_check.part import CheckContext
from dml_core.recipes import load_recipe, mini_version
from dml_core.recipes.mini import main_run_references
from dml_core.training import step

OUT = Path(__file__).resolve().parents[2] / "tables" / "benchmarks" / "precision-cpu.json"


def cpu_autocast_for_cuda(device: torch.device, precision: str):
    """The CPU's bf16 autocast where the trainer would autocast on CUDA (``precision``: ``training.precision``)."""
    return torch.autocast("cpu", dtype=torch.bfloat16, enabled=precision == "bf16")


def measure(data_root: Path, work_dir: Path, runs: tuple[str, ...] | None = None) -> dict[str, dict]:
    """Each run's figures at the mini scale (``runs``: the precision part's, unless given), under the stand-in
    autocast (restored after)."""
    context = CheckContext(torch.device("cpu"), work_dir, data_root, work_dir)
    trainer_autocast, step.autocast = step.autocast, cpu_autocast_for_cuda
    try:
        return {
            run: precision.recipe_precision_figures(mini_version(load_recipe(run)), context)
            for run in runs or main_run_references()
        }
    finally:
        step.autocast = trainer_autocast


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--out", type=Path, default=OUT)
    parser.add_argument("--data-root", type=Path, help="where the mini glyphs are (generated there if missing)")
    args = parser.parse_args(argv)
    with tempfile.TemporaryDirectory() as scratch:
        data_root = args.data_root or Path(scratch) / "data"
        figures = measure(data_root, Path(scratch) / "work")
    report = {
        "measurement": __doc__.split("\n\n")[0].replace("\n", " "),
        "environment": {**provenance.environment(), "git": provenance.git_state()},
        "scale": "mini tier: the main recipe's mini_version (embedded_mini glyphs, random weights, narrowed backbone)",
        "steps": precision.RECIPE_STEPS,
        "figures": {
            "bf16_rel": "||U_bf16 - U_fp32|| / ||U_fp32||, U the trainable parameters' change over the steps",
            "other_batch_rel": "||U_batch - U_fp32|| / ||U_fp32||, U_batch from the run's second batch in fp32",
            "ratio": "bf16_rel / other_batch_rel",
            "nudge_rel": f"||U_nudge - U_fp32|| / ||U_fp32||, U_nudge from the first batch times 1 + {precision.NUDGE}",
            "ratio_to_nudge": "bf16_rel / nudge_rel",
        },
        "recipes": figures,
    }
    atomic_write_json(args.out, report)
    for run, figure in figures.items():
        print(f"{run}: bf16 {figure['bf16_rel']:.2e}, nudge {figure['nudge_rel']:.2e}, "
              f"other batch {figure['other_batch_rel']:.2e}")  # fmt: skip
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
