"""The parts of the check, in the order they run: the quick ones first, so a broken GPU path shows within a minute,
then the benchmark, alone on the machine, and the mini tier last (the longest, and the least a GPU box needs to
know first). On an H200 (2026-11-26): parity 1 s, pipelines 7 s, evaluation 15 s, resume 84 s, torchrun 45 s."""

from __future__ import annotations

from dml_core.gpu_check.bench import run_bench
from dml_core.gpu_check.evaluation import run_evaluation
from dml_core.gpu_check.graphs import run_graphs
from dml_core.gpu_check.mini import run_mini
from dml_core.gpu_check.overhead import run_overhead
from dml_core.gpu_check.parity import run_parity
from dml_core.gpu_check.part import Part
from dml_core.gpu_check.pipelines import run_pipelines
from dml_core.gpu_check.precision import run_precision
from dml_core.gpu_check.resume import run_resume
from dml_core.gpu_check.smoke import run_smoke
from dml_core.gpu_check.torchrun import run_torchrun
from dml_core.registry import Registry

_PARTS = {
    part.name: part
    for part in (
        Part("parity", "one training step of every loss, CPU against GPU (fp32, no TF32)", run_parity),
        Part(
            "precision",
            "one step of every loss under bf16 autocast against fp32, beside another batch's",
            run_precision,
        ),
        Part("pipelines", "the cache pipeline's training batches on the GPU against the PIL path's", run_pipelines),
        Part("evaluation", "R@K and MAP@R of an SOP-sized embedding set on the GPU and the CPU", run_evaluation),
        Part("resume", "dml train killed by SIGKILL after a checkpoint, resumed: final parameters", run_resume),
        Part("torchrun", "dml train under torchrun (one GPU), the suite's collectives over NCCL", run_torchrun),
        Part("smoke", "every paper's smoke tier on the GPU, PIL and cache pipelines, DataLoader workers on", run_smoke),
        Part("bench", "the training benchmark, every paper on its default pipeline (JSON kept)", run_bench),
        Part("overhead", "damlrrm's backbone bound with each host-side setting changed, CUDA graphs too", run_overhead),
        Part("graphs", "training.cuda_graphs against eager: each paper's main recipe, numbers and speed", run_graphs),
        Part("mini", "one paper's mini tier (seed 0): gains and time", run_mini),
    )
}
PARTS: Registry[Part] = Registry("part", "--parts", _PARTS)
