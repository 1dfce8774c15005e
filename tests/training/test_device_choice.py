"""The device is never a surprise: a full-scale run refuses to fall back to the CPU, a GPU that nvidia-smi lists but
torch cannot use is explained by the driver against the wheel's CUDA (with what to install), and a run's device is
described as its first line names it. nvidia-smi is faked by a script on PATH, torch's view by monkeypatching."""

import os
import re
import stat

import pytest
import torch

from dml_core.cli import main
from dml_core.errors import InputError
from dml_core.tier import Tier
from dml_core.training import device_choice
from dml_core.training.device_choice import (
    check_run_device,
    describe_device,
    listed_gpus,
    newest_cuda_for_driver,
    unusable_gpu,
)
from dml_core.training.distributed import SINGLE_PROCESS
from tests.training.tiny_runs import TINY_RUN, recipe_file


def fake_nvidia_smi(folder, monkeypatch, output: str, status: int = 0) -> None:
    """An ``nvidia-smi`` first on PATH that prints ``output`` whatever it is asked (the query's csv lines)."""
    folder.mkdir(parents=True, exist_ok=True)
    script = folder / "nvidia-smi"
    lines = " ".join(f"'{line}'" for line in output.splitlines())
    script.write_text(f"#!/bin/sh\nprintf '%s\\n' {lines}\nexit {status}\n")  # sh's own printf: no PATH needed
    script.chmod(script.stat().st_mode | stat.S_IXUSR)
    monkeypatch.setenv("PATH", f"{folder}{os.pathsep}{os.environ.get('PATH', '')}")


@pytest.fixture
def no_cuda(monkeypatch):
    """torch sees no GPU, and its wheel is a CUDA 13.0 build (the pinned torch's kind)."""
    monkeypatch.setattr(torch.cuda, "is_available", lambda: False)
    monkeypatch.setattr(torch.version, "cuda", "13.0")


@pytest.fixture
def no_nvidia_smi(tmp_path, monkeypatch):
    """A PATH without nvidia-smi (a machine without NVIDIA's driver)."""
    monkeypatch.setenv("PATH", str(tmp_path / "empty"))


def test_nvidia_smi_s_answer_is_read_as_name_and_driver(tmp_path, monkeypatch):
    fake_nvidia_smi(
        tmp_path / "bin", monkeypatch, "535.104.05, NVIDIA A100-SXM4-80GB\n535.104.05, NVIDIA A100-SXM4-80GB"
    )
    assert listed_gpus() == [device_choice.ListedGpu("NVIDIA A100-SXM4-80GB", "535.104.05")] * 2
    fake_nvidia_smi(tmp_path / "h200", monkeypatch, "580.159.04, NVIDIA H200")  # what one H200 box answered
    assert listed_gpus() == [device_choice.ListedGpu("NVIDIA H200", "580.159.04")]
    assert newest_cuda_for_driver("580.159.04") == 13
    fake_nvidia_smi(tmp_path / "failing", monkeypatch, "NVIDIA-SMI has failed because it couldn't communicate", 9)
    assert listed_gpus() == []


def test_the_newest_cuda_a_driver_runs_follows_nvidia_s_minimum_drivers():
    # NVIDIA's minimum drivers for minor version compatibility: 13.x >= 580, 12.x >= 525.60.13, 11.x >= 450.80.02
    assert [newest_cuda_for_driver(d) for d in ("580.00", "575.57.08", "525.60.13", "525.60.12", "450.80.02")] == [
        13, 12, 12, 11, 11,
    ]  # fmt: skip
    assert newest_cuda_for_driver("440.33.01") is None


@pytest.mark.usefixtures("no_cuda")
def test_a_driver_too_old_for_the_wheel_is_named_with_what_to_install(tmp_path, monkeypatch):
    fake_nvidia_smi(tmp_path / "bin", monkeypatch, "535.104.05, NVIDIA A100-SXM4-80GB")
    with pytest.raises(InputError) as refused:
        check_run_device(None, Tier.FULL)
    message = str(refused.value)
    assert message.startswith("a full-scale run trains on a GPU, and nvidia-smi lists NVIDIA A100-SXM4-80GB with ")
    assert f"driver 535.104.05, but torch {torch.__version__} is built for CUDA 13.0, which needs driver 580 or " in (
        message
    )
    assert "install a newer NVIDIA driver (>= 580), or a torch wheel built for CUDA 12.x, `pip install torch==" in (
        message
    )
    assert "--index-url https://download.pytorch.org/whl/cu126`" in message
    assert message.endswith("pass --device cpu to train it on the CPU anyway (days where a GPU takes hours), or "
                            "--smoke / --mini for the CPU tiers")  # fmt: skip
    # asked for the GPU by name: the same reason
    with pytest.raises(InputError, match=r"device 'cuda': expected a CUDA GPU, found none torch can use \(nvidia-smi "
                                         r"lists NVIDIA A100.*needs driver 580 .*\); pass --device cpu"):  # fmt: skip
        SINGLE_PROCESS.device("cuda")


@pytest.mark.usefixtures("no_cuda")
def test_a_cpu_only_torch_and_a_hidden_gpu_are_told_apart(tmp_path, monkeypatch):
    fake_nvidia_smi(tmp_path / "bin", monkeypatch, "550.54.15, NVIDIA L4")
    monkeypatch.setattr(torch.version, "cuda", None)
    reason = unusable_gpu()
    assert f"torch {torch.__version__} is a CPU-only build; install a torch wheel built for CUDA 12.x" in reason
    assert "https://download.pytorch.org/whl/cu126" in reason
    monkeypatch.setattr(torch.version, "cuda", "13.0")
    fake_nvidia_smi(tmp_path / "new", monkeypatch, "580.65.06, NVIDIA H200")
    reason = unusable_gpu()
    assert reason.startswith("nvidia-smi lists NVIDIA H200 with driver 580.65.06, new enough for torch ")
    assert "CUDA_VISIBLE_DEVICES" in reason


@pytest.mark.usefixtures("no_cuda", "no_nvidia_smi")
def test_only_a_full_scale_run_refuses_the_cpu_and_device_cpu_lets_it():
    found = f"torch {torch.__version__} finds no CUDA GPU on this machine; pass --device cpu to train it on the CPU"
    with pytest.raises(InputError, match=re.escape(found)):
        check_run_device(None, Tier.FULL)
    check_run_device("cpu", Tier.FULL)  # asked for
    check_run_device(None, Tier.SMOKE)  # the CPU tiers
    check_run_device(None, Tier.MINI)


def test_the_device_line_names_the_gpu_or_the_cpu_with_the_versions(tmp_path, monkeypatch):
    monkeypatch.setattr(torch.cuda, "get_device_name", lambda device: "NVIDIA H200")
    monkeypatch.setattr(torch.version, "cuda", "13.0")
    assert describe_device(torch.device("cuda", 0)) == f"NVIDIA H200 (cuda:0), torch {torch.__version__}, CUDA 13.0"
    monkeypatch.setattr(torch.cuda, "is_available", lambda: False)
    monkeypatch.setenv("PATH", str(tmp_path / "empty"))
    line = describe_device(torch.device("cpu"))
    assert line.startswith("CPU (") and line.endswith(f"), torch {torch.__version__}")
    fake_nvidia_smi(tmp_path / "bin", monkeypatch, "535.104.05, NVIDIA A100-SXM4-80GB")  # a smoke run's, say
    line = describe_device(torch.device("cpu"))
    assert line.startswith("CPU (") and "(nvidia-smi lists NVIDIA A100-SXM4-80GB with driver 535.104.05" in line


@pytest.mark.usefixtures("no_cuda", "no_nvidia_smi")
def test_dml_train_refuses_a_full_scale_run_on_the_cpu_before_any_work(tmp_path, capsys):
    path = recipe_file(tmp_path, TINY_RUN)
    assert main(["train", str(path), "--out", str(tmp_path / "run")]) == 2
    assert "a full-scale run trains on a GPU" in capsys.readouterr().err
    assert not (tmp_path / "run").exists()
