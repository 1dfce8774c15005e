"""The PIL-path worker benchmark still runs (the test gate does not collect bench_*.py): every paper's figures, in its
quick mode, with its report written outside the repository."""

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from tests.benchmarks.loss_ops import MAIN_RECIPES
from tests.processes import completed_report

ROOT = Path(__file__).resolve().parents[2]


def test_the_pipeline_benchmark_measures_every_papers_worker(tmp_path):
    command = [
        sys.executable, "-m", "pytest", str(ROOT / "tests" / "benchmarks" / "bench_pipeline.py"), "-q",
        "-o", "python_files=bench_*.py", "--benchmark-only", "-p", "no:cacheprovider",
    ]  # fmt: skip
    environment = {
        **{name: value for name, value in os.environ.items() if not name.startswith("PYTEST_XDIST_")},
        "DML_BENCH_OUT": str(tmp_path),
        "DML_BENCH_SCALE": "0.1",
    }
    completed = subprocess.run(command, capture_output=True, text=True, cwd=tmp_path, env=environment, timeout=600)
    assert completed.returncode == 0, completed_report(completed)
    report = json.loads((tmp_path / "pipeline-cpu.json").read_text())
    assert set(report["papers"]) == set(MAIN_RECIPES) and report["rounds"] == 3
    for paper, figures in report["papers"].items():
        rates = figures["images_per_second_per_thread"]
        assert set(rates) == {"decode", "worker", "float_in_worker", "to_model_input"}, paper
        assert all(rate > 0 for rate in rates.values()) and figures["ratio_to_decode"]["decode"] == 1.0
        assert figures["workers_for_1000_images_per_second"] == pytest.approx(1000 / rates["worker"])
