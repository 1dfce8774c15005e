"""The plan before the first step: ``dml reproduce KEY --plan`` prints the runs with their expected hours and its
source, each input and its state, and the disk each stage needs against the free space, then exits 0 having
checked, built and written nothing; on a GPU the cache the runs will train from is a stage of its own."""

import pytest
import torch

from dml_core.cli import main
from dml_core.readable import readable_bytes
from dml_core.runner import calibration, plan_report
from dml_core.runner.disk_needs import DATASET_BYTES
from dml_core.runner.plan import paper_runs, plan_runs
from dml_core.runner.plan_report import PlanSetting, plan_lines
from dml_core.tier import Tier
from tests.tables.synthetic import PAPER_KEY, write_papers_dir, write_recipe
from tests.training.test_device_choice import fake_nvidia_smi

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
    not_measured = (
        "unknown (not measured on the CPU: `--calibrate` times it here (the committed measurements and the published "
        "times are GPUs'))"
    )  # the paper's Table 8 prints 13.2 h for OURS, on a GPU: not a CPU run's time
    assert lines[3:5] == [f"    lifted-cub200 seed 0: {not_measured}", f"    ours-cub200 seed 0: {not_measured}"]
    assert lines[5] == "  unknown time: 2 runs (lifted-cub200, ours-cub200): why in their lines"
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


@pytest.fixture
def no_gpu(tmp_path, monkeypatch):
    """A machine without a GPU (a login node): torch sees none and nvidia-smi is absent."""
    monkeypatch.setattr(torch.cuda, "is_available", lambda: False)
    monkeypatch.setenv("PATH", str(tmp_path / "empty"))


@pytest.mark.usefixtures("no_gpu")
def test_planned_without_a_gpu_each_run_gets_hours_or_a_reason_and_its_cache_is_counted(tmp_path, paper_args, capsys):
    cached = {"dataset": "cub200", "transforms": {"resize_mode": "squash", "resize": 256, "crop_size": 227,
              "train_crop": "random_crop"}}  # fmt: skip  # random crops of the resized image: the cache on CUDA
    write_recipe(
        tmp_path / "reproduce", data=cached, sampler={"name": "pk", "params": {"classes_per_batch": 12,
        "images_per_class": 5}}, training={"iterations": 40_000},
    )  # fmt: skip  # ours-cub200: googlenet, 60 images a step
    assert main([*paper_args, "--plan"]) == 0
    lines = capsys.readouterr().out.splitlines()
    data = tmp_path / "data"
    assert lines[1].endswith("; planned as on a GPU, where a full-scale run trains")
    assert lines[4] == (  # the glyph run's step: far from any measured one
        "    lifted-cub200 seed 0: unknown (its FLOPs a step are 4e-05 times those of the nearest committed "
        "measurement (damlrrm ours-cub200 on NVIDIA H200): beyond the cost model's reach (4x either way), and no "
        "published training time)"
    )
    assert lines[5] == (  # half the images of the measured step, in fp32 where it was bf16
        "    ours-cub200 seed 0: 54 min of training (cost model from [1]: x1.00 = backbone FLOPs x images a step "
        "x0.50 and fp32 against bf16 x2.00, assumed; not scaled: loss multi_similarity against damlrrm; 12.3 it/s x "
        "40,000 iterations)"
    )
    assert lines[6] == "  committed measurements the hours rest on:"
    assert lines[7].startswith("    [1] damlrrm ours-cub200 on NVIDIA H200: 12.3 it/s end to end, googlenet/linear, ")
    assert lines[7].endswith("(tables/benchmarks/training-cuda.json); its hours are an NVIDIA H200's: no GPU here")
    assert lines[8].startswith("    the cost model: a step's seconds scale with the backbone's forward FLOPs per ")
    assert lines[9:11] == [
        "  expected time: 54 min for 1 run = 54 min by the cost model (1 run); evaluations counted only where "
        "measured here",
        "  unknown time: 1 run (lifted-cub200): why in their lines",
    ]
    # the uint8 cache a GPU run trains from, counted though this machine has no GPU: squashed, its size is exact
    assert f"    uint8 cache cub200/train (squash 256) under {data}: to be built" in lines
    cache = readable_bytes(5_864 * 3 * 256 * 256)
    assert f"    uint8 cache: {cache} in {data} (cub200/train squash 256: 5,864 images)" in lines


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


@pytest.mark.usefixtures("no_gpu")
def test_a_plan_on_a_gpu_torch_cannot_use_is_one_line(tmp_path, paper_args, monkeypatch, capsys):
    monkeypatch.setattr(torch.version, "cuda", "13.0")
    fake_nvidia_smi(tmp_path / "bin", monkeypatch, "535.104.05, NVIDIA A100-SXM4-80GB")  # a driver too old for 13.0
    assert main([*paper_args, "--plan", "--device", "cuda"]) == 2
    captured = capsys.readouterr()
    assert captured.out == ""
    (line,) = captured.err.splitlines()
    assert line.startswith("error: device 'cuda': expected a CUDA GPU, found none torch can use (nvidia-smi lists ")
    assert "driver 535.104.05, but torch " in line and "is built for CUDA 13.0, which needs driver 580" in line


def test_calibrate_times_the_shapes_here_and_the_hours_follow(paper_args, monkeypatch, capsys):
    monkeypatch.setitem(calibration.STEPS, "cpu", (0, 2))
    monkeypatch.setitem(calibration.EVALUATION_BATCHES, "cpu", (0, 1))
    assert main([*paper_args, "--plan", "--calibrate", "--device", "cpu", "--only", "lifted-cub200"]) == 0
    lines = capsys.readouterr().out.splitlines()
    (run,) = [line for line in lines if line.startswith("    lifted-cub200 seed 0: ")]
    assert " (measured here: " in run and " it/s x 10 iterations + 1 evaluations of 1,128 images at " in run
    heading = lines.index(
        "  timed here on synthetic batches, before the first run (the data pipeline and the evaluations' metrics "
        "not timed):"
    )
    assert lines[heading + 1].startswith("    bn_inception x0.125/linear, 8 x 32 px a step, fp32, pil pipeline, ")
    assert lines[heading + 1].endswith(" images/s (2 steps on the CPU, " + f"{torch.get_num_threads()} threads)")
    (total,) = [line for line in lines if line.startswith("  expected time: ")]
    assert total.endswith(" measured here (1 run); evaluations included")
