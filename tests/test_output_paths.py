"""Output roots follow DML_RUNS_DIR / DML_RESULTS_DIR / DML_TABLES_DIR (the Docker image sets them)."""

from pathlib import Path

from dml_core.output_paths import results_root, run_folder, runs_root, tables_root
from dml_core.tier import Tier


def test_roots_default_to_the_working_directory_and_follow_the_environment(monkeypatch):
    for name in ("DML_RUNS_DIR", "DML_RESULTS_DIR", "DML_TABLES_DIR"):
        monkeypatch.delenv(name, raising=False)
    assert (runs_root(), results_root(), tables_root()) == (Path("runs"), Path("results"), Path("tables"))
    monkeypatch.setenv("DML_RESULTS_DIR", "/results/results")
    monkeypatch.setenv("DML_TABLES_DIR", "/results/tables")
    monkeypatch.setenv("DML_RUNS_DIR", "/results/runs")
    assert (results_root(), tables_root()) == (Path("/results/results"), Path("/results/tables"))
    assert run_folder(runs_root(), "gpw", "x", 2, Tier.SMOKE) == Path("/results/runs/smoke/gpw/x-seed2")
