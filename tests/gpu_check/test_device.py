"""A GPU is usable, absent, or present but unusable: the last is told apart from the second by the device files and
nvidia-smi, whatever torch says."""

import pytest
import torch

from dml_core.gpu_check.device import gpu_evidence, probe_gpu

pytestmark = pytest.mark.skipif(torch.cuda.is_available(), reason="needs a machine without a GPU")


def _fake_nvidia_smi(tmp_path, output):
    script = tmp_path / "nvidia-smi"
    script.write_text(f"#!/bin/sh\nprintf '{output}'\n")
    script.chmod(0o755)
    return str(script)


def test_no_device_file_and_no_nvidia_smi_is_no_gpu(tmp_path):
    state = probe_gpu(dev_dir=tmp_path, nvidia_smi=None)
    assert not state.usable and state.problem is None


def test_a_device_file_torch_cannot_use_is_a_problem_naming_both(tmp_path):
    (tmp_path / "nvidia0").touch()
    (tmp_path / "nvidiactl").touch()
    state = probe_gpu(dev_dir=tmp_path, nvidia_smi=None)
    assert not state.usable
    assert state.problem.startswith(f"a GPU is present ({tmp_path / 'nvidia0'} exists) but torch cannot use it: torch ")
    assert torch.__version__ in state.problem


def test_nvidia_smi_listing_a_gpu_counts_as_present(tmp_path):
    smi = _fake_nvidia_smi(tmp_path, "GPU 0: NVIDIA H100 80GB HBM3 (UUID: GPU-1234)\\n")
    assert gpu_evidence(tmp_path / "dev", smi) == "nvidia-smi lists GPU 0: NVIDIA H100 80GB HBM3 (UUID: GPU-1234)"
    assert "nvidia-smi lists GPU 0" in probe_gpu(tmp_path / "dev", smi).problem


def test_nvidia_smi_without_a_gpu_or_missing_is_no_evidence(tmp_path):
    assert gpu_evidence(tmp_path, _fake_nvidia_smi(tmp_path, "No devices were found\\n")) is None
    assert gpu_evidence(tmp_path, str(tmp_path / "absent-nvidia-smi")) is None
    (tmp_path / "nvidia-uvm").touch()  # a driver file, not a GPU
    assert gpu_evidence(tmp_path, None) is None
