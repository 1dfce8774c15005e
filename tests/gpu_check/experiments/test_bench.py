"""The bench part's verdicts on the CPU, the benchmark itself stubbed (its GPU figures need a GPU; that it runs is
``tests/benchmarks/test_bench_training.py``): a benchmark the check's time limit stopped keeps the measurements its
report holds so far; one that wrote nothing in this call fails the part."""

import json

import pytest
import torch

from dml_core.gpu_check.experiments import bench
from dml_core.gpu_check.part import CheckContext, PartFailed, PartStopped


def _context(tmp_path):
    return CheckContext(torch.device("cuda"), tmp_path / "work", tmp_path / "data", tmp_path / "report")


def test_a_benchmark_stopped_at_the_time_limit_keeps_what_it_measured(tmp_path, monkeypatch):
    measured = {
        "damlrrm": {"default_pipeline": "cache", "pipelines": {"cache": {"model_only_iterations_per_second": 14.9}}}
    }

    def stopped_after_one_paper(what, command, log_path, timeout, env, deadline):
        (tmp_path / "report").mkdir(exist_ok=True)
        report = {"complete": False, "papers": measured}
        (tmp_path / "report" / "training-cuda.json").write_text(json.dumps(report))
        raise PartStopped(f"time limit reached: {what} stopped after 90 s (log: {log_path})")

    monkeypatch.setattr(bench, "run_child", stopped_after_one_paper)
    with pytest.raises(PartStopped, match=r"^1 of 5 papers measured \(damlrrm cache\); time limit reached: the"):
        bench.run_bench(_context(tmp_path))


def test_a_benchmark_stopped_before_its_first_measurement_says_none(tmp_path, monkeypatch):
    def stopped_at_once(what, command, log_path, timeout, env, deadline):
        raise PartStopped(f"time limit reached: {what} stopped after 20 s")

    monkeypatch.setattr(bench, "run_child", stopped_at_once)
    with pytest.raises(PartStopped, match=r"^0 of 5 papers measured \(none\)") as stopped:
        bench.run_bench(_context(tmp_path))
    assert stopped.value.figures == {"report": None, "papers": {}}


def test_a_benchmark_that_crashed_before_writing_fails_the_part(tmp_path, monkeypatch):
    def crashed(what, command, log_path, timeout, env, deadline):
        raise PartFailed(f"{what} exited 1: RuntimeError: CUDA error (log: {log_path})")

    monkeypatch.setattr(bench, "run_child", crashed)
    with pytest.raises(PartFailed, match="the training benchmark exited 1: RuntimeError: CUDA error"):
        bench.run_bench(_context(tmp_path))
