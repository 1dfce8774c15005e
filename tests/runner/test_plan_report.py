"""The plan before the first step: ``dml reproduce KEY --plan`` prints the runs with their expected hours and its
source, each input and its state, and the disk each stage needs against the free space, then exits 0 having
checked, built and written nothing; on a GPU the cache the runs will train from is a stage of its own."""

import pytest
import torch

from dml_core.cli import main
from dml_core.pipeline.choice import readable_bytes
from dml_core.runner import plan_report
from dml_core.runner.disk_needs import DATASET_BYTES
from dml_core.runner.plan import paper_runs, plan_runs
from dml_core.runner.plan_report import PlanSetting, plan_lines
from dml_core.tier import Tier
from tests.tables.synthetic import PAPER_KEY, write_papers_dir, write_recipe

GLYPH_RUN = {
    "targets": [{"table": "table1", "row": "lifted-cub200"}],
    "data": {"dataset": "embedded", "num_workers": 0, "transforms": {"resize": 40, "crop_size": 32}},
    "model": {"backbone": "bn_inception", "weights": "random", "width": 0.125, "embedding_dim": 16},
}


@pytest.fixture
def paper_args(tmp_path, monkeypatch):
    """``dml reproduce`` of a synthetic paper: ours-cub200 (CUB and GoogLeNet's weights, neither here) and a run on
    the generated glyphs; everything under ``tmp_path``."""
    monkeypatch.setenv("DML_WEIGHTS_DIR", str(tmp_path / "weights"))
    write_recipe(tmp_path / "reproduce")
    write_recipe(tmp_path / "reproduce", id="lifted-cub200", **GLYPH_RUN)
    return [
        "reproduce", PAPER_KEY, "--recipes", str(tmp_path / "reproduce"),
        "--papers-dir", str(write_papers_dir(tmp_path)), "--runs", str(tmp_path / "runs"),
        "--results", str(tmp_path / "results"), "--tables", str(tmp_path / "tables"),
        "--data-root", str(tmp_path / "data"),
    ]  # fmt: skip


def test_the_plan_says_runs_inputs_disk_and_hours_and_touches_nothing(tmp_path, paper_args, capsys):
    assert main([*paper_args, "--plan", "--device", "cpu"]) == 0
    lines = capsys.readouterr().out.splitlines()
    data = tmp_path / "data"
    assert lines[0] == "damlrrm: the plan (full scale), before the first step"
    assert lines[1].startswith("  device: CPU (") and f"torch {torch.__version__}" in lines[1]
    assert lines[2] == "  runs: 2 to train, 0 finished earlier, 0 linear"
    assert lines[3] == (
        "    lifted-cub200 seed 0: unknown (no measurement of lifted-cub200 on the CPU and no published training time)"
    )
    assert lines[4] == (  # the synthetic paper's Table 8 prints 13.2 h for OURS
        "    ours-cub200 seed 0: 13.2 h (the paper's published training time, table8, on its authors' GPU; none "
        "measured on the CPU)"
    )
    assert (
        lines[5]
        == "  expected training time: 13.2 h, and 1 run of unknown time (the training loops; evaluations not counted)"
    )
    assert lines[6:10] == [
        "  inputs:",
        f"    dataset embedded under {data}: to be built",
        f"    dataset cub200 under {data}: missing",
        "    weight file googlenet-1378be20.pth (googlenet): missing",
    ]
    cub = readable_bytes(DATASET_BYTES["cub200"].archives)
    assert lines[10:13] == [
        "  disk:",
        f"    archives: {cub} in {data} (cub200 {cub})",
        f"    extracted files: {cub} in {data} (cub200 {cub}, estimated as its archives)",
    ]
    assert lines[13] == f"    uint8 cache: 0 B in {data} (nothing new)"  # the CPU trains on the PIL path
    assert lines[14].startswith("    checkpoints: ") and ", the model and optimiser state, kept)" in lines[14]
    assert lines[15].startswith("    results: ") and "(2 runs: results files and their per-query terms)" in lines[15]
    assert lines[16].startswith(f"    on the disk of {data}, {tmp_path / 'runs'}, {tmp_path / 'results'}: ")
    assert lines[16].endswith(": fits") and len(lines) == 17
    assert sorted(path.name for path in tmp_path.iterdir()) == ["papers", "reproduce"]  # nothing written


def test_the_plan_says_what_does_not_fit_and_what_a_run_would_refuse(paper_args, monkeypatch, capsys):
    monkeypatch.setattr(plan_report, "free_disk_bytes", lambda folder: 1024)
    monkeypatch.setattr(torch.cuda, "is_available", lambda: False)
    monkeypatch.setenv("PATH", "")  # no nvidia-smi
    assert main([*paper_args, "--plan"]) == 0
    out = capsys.readouterr().out
    assert "  (a run would stop here: a full-scale run trains on a GPU, and torch " in out
    assert "1.0 KiB free: DOES NOT FIT: free space there or choose other folders" in out


def test_on_a_gpu_the_cache_to_build_is_a_stage_sized_from_the_images(tmp_path, odd_sized_cub):
    squashed = {"dataset": "cub200", "transforms": {"resize_mode": "squash", "resize": 40, "crop_size": 32,
                "train_crop": "random_crop"}}  # fmt: skip
    write_recipe(tmp_path / "reproduce", data=squashed, model={"backbone": "googlenet", "weights": "random"})
    runs, _ = paper_runs(tmp_path / "reproduce", PAPER_KEY)
    plans = plan_runs(PAPER_KEY, runs, [0, 1], Tier.FULL, tmp_path / "runs", tmp_path / "results")
    setting = PlanSetting(
        key=PAPER_KEY, tier=Tier.FULL, data_root=odd_sized_cub, runs_root=tmp_path / "runs",
        results_root=tmp_path / "results", device_text="NVIDIA H200 (cuda:0)", device_type="cuda",
        gpu_name="NVIDIA H200", max_steps=1000,
    )  # fmt: skip
    lines = plan_lines(setting, plans, [True, False], [])
    assert "  runs: 1 to train, 1 finished earlier, 0 linear" in lines
    assert f"    uint8 cache cub200/train (squash 40) under {odd_sized_cub}: to be built" in lines
    assert (
        f"    uint8 cache: 28.1 KiB in {odd_sized_cub} (cub200/train squash 40: 6 images)" in lines
    )  # 6 x 3 x 40 x 40
    assert f"    archives: 0 B in {odd_sized_cub} (nothing new)" in lines  # the data is here
    (checkpoints,) = [line for line in lines if line.startswith("    checkpoints: ")]
    assert "one at a time (" in checkpoints and "), removed once its run ends" in checkpoints  # a rehearsal's
