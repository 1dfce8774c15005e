"""What a results file records of the machine: the CPU's model and kernel set beside the software versions."""

import torch

from dml_core import provenance


def test_the_environment_names_the_cpu_and_its_kernel_set():
    recorded = provenance.environment()
    assert recorded["cpu_capability"] == torch.backends.cpu.get_cpu_capability()
    assert isinstance(recorded["cpu"], str) and recorded["cpu"]


def test_the_cpu_model_is_read_from_proc_cpuinfo(tmp_path, monkeypatch):
    cpuinfo = tmp_path / "cpuinfo"
    cpuinfo.write_text("processor\t: 0\nvendor_id\t: AuthenticAMD\nmodel name\t: AMD EPYC 9B14\nflags\t\t: fpu\n")
    real_path = provenance.Path
    monkeypatch.setattr(provenance, "Path", lambda path: cpuinfo if path == "/proc/cpuinfo" else real_path(path))
    assert provenance.cpu_model() == "AMD EPYC 9B14"


def test_without_proc_cpuinfo_the_platform_answers(tmp_path, monkeypatch):
    real_path = provenance.Path
    missing = tmp_path / "no-cpuinfo"
    monkeypatch.setattr(provenance, "Path", lambda path: missing if path == "/proc/cpuinfo" else real_path(path))
    monkeypatch.setattr(provenance.platform, "processor", lambda: "x86_64")
    assert provenance.cpu_model() == "x86_64"
