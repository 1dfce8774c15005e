"""What a results file records of the machine (the CPU's model and kernel set beside the software versions) and of the
code (its commit, and whether the checkout differed from it)."""

import subprocess

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


def _git(root, *args):
    subprocess.run(["git", "-C", str(root), *args], check=True, capture_output=True)


def test_a_replaced_results_or_tables_file_leaves_the_checkout_clean_and_a_code_change_does_not(tmp_path):
    """A --rerun of committed results replaces tracked files under results/ while later runs start: they ran the
    committed code, so they are clean; an edited recipe is dirty, with a diff hash of the code change alone."""
    for folder in ("results", "tables", "reproduce"):
        (tmp_path / folder).mkdir()
        (tmp_path / folder / "file.txt").write_text("committed\n")
    _git(tmp_path, "init", "-q")
    _git(tmp_path, "add", ".")
    _git(tmp_path, "-c", "user.name=t", "-c", "user.email=t@t", "commit", "-q", "-m", "c")
    (tmp_path / "results" / "file.txt").write_text("a new run's numbers\n")
    (tmp_path / "tables" / "file.txt").write_text("its page\n")
    assert provenance.code_state(tmp_path)["dirty"] is False
    (tmp_path / "reproduce" / "file.txt").write_text("an edited recipe\n")
    edited = provenance.code_state(tmp_path)
    assert edited["dirty"] is True
    (tmp_path / "results" / "file.txt").write_text("another run's numbers\n")
    assert provenance.code_state(tmp_path)["diff"] == edited["diff"]
