"""The torchrun part on the CPU: ``dml train`` under torchrun with one process, and the suite's collectives through
the probe's one-rank group over gloo (NCCL needs a GPU; the calls are the same)."""

from pathlib import Path

import pytest
import torch

from dml_core.gpu_check.part import CheckContext
from dml_core.gpu_check.torchrun import run_torchrun


@pytest.mark.slow
@pytest.mark.usefixtures("glyph_data_root")
def test_the_part_trains_under_torchrun_and_runs_every_collective(tmp_path):
    context = CheckContext(torch.device("cpu"), tmp_path / "work", tmp_path / "data", tmp_path / "report")
    context.work_dir.mkdir(parents=True)
    outcome = run_torchrun(context)
    assert outcome.figures["results_device"] == "cpu" and outcome.figures["world_size"] == 1
    probe = outcome.figures["collectives"]
    assert probe["backend"] == "gloo"
    assert probe["checks"] == {
        "sharded all-gather and its backward": "ok",
        "DDP step and gradient averaging": "ok",
        "gather_rows, broadcast, all_gather_objects, buffers, barrier": "ok",
        "SyncBatchNorm": "not on the CPU (SyncBatchNorm needs CUDA)",
    }
    assert not Path(tmp_path / "report").exists()  # nothing written outside its scratch folder
