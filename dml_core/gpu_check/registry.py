"""The parts of the check, in the order they run: the quick ones first, so a broken GPU path shows within a minute,
then the benchmark, alone on the machine, and the mini tier last (the longest, and the least a GPU box needs to
know first)."""

from __future__ import annotations

from dml_core.gpu_check.evaluation import run_evaluation
from dml_core.gpu_check.experiments.bench import run_bench
from dml_core.gpu_check.experiments.graphs import run_graphs
from dml_core.gpu_check.experiments.overhead import run_overhead
from dml_core.gpu_check.experiments.precision import run_precision
from dml_core.gpu_check.mini import run_mini
from dml_core.gpu_check.parity import run_parity
from dml_core.gpu_check.part import Part
from dml_core.gpu_check.pipelines import run_pipelines
from dml_core.gpu_check.resume import run_resume
from dml_core.gpu_check.smoke import run_smoke
from dml_core.gpu_check.torchrun import run_torchrun
from dml_core.registry import Registry

# needs_seconds: the seconds a part needs left to start (docs/gpu.md says where each comes from): all of its figures
# for a part that cannot stop early, the first for one that stops at the time limit with what it has (precision,
# smoke, bench, overhead, graphs).
_PARTS = {
    part.name: part
    for part in (
        Part("parity", "one training step of every loss, CPU against GPU (fp32, no TF32)", run_parity,
             needs_seconds=15),
        Part("precision", "bf16 autocast against fp32: a step of every loss, 3 of each paper's main recipe",
             run_precision, needs_seconds=20),
        Part("pipelines", "the cache pipeline's training batches on the GPU against the PIL path's", run_pipelines,
             needs_seconds=20),
        Part("evaluation", "R@K and MAP@R of an SOP-sized embedding set on the GPU and the CPU", run_evaluation,
             needs_seconds=30),
        Part("resume", "dml train killed by SIGKILL after a checkpoint, resumed: final parameters", run_resume,
             needs_seconds=110),
        Part("torchrun", "dml train under torchrun (one GPU), the suite's collectives over NCCL", run_torchrun,
             needs_seconds=60),
        Part("smoke", "every paper's smoke tier on the GPU, PIL and cache pipelines, DataLoader workers on", run_smoke,
             needs_seconds=60),
        Part("bench", "the training benchmark, every paper on its default pipeline (JSON kept)", run_bench,
             needs_seconds=90),
        Part("overhead", "damlrrm's backbone bound with each host-side setting changed, CUDA graphs too",
             run_overhead, needs_seconds=30),
        Part("graphs", "training.cuda_graphs against eager: each paper's main recipe, numbers and speed", run_graphs,
             needs_seconds=30),
        Part("mini", "one paper's mini tier (seed 0): gains and time", run_mini, needs_seconds=300),
    )
}  # fmt: skip
PARTS: Registry[Part] = Registry("part", "--parts", _PARTS)
