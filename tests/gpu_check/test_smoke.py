"""The smoke part's plan and verdicts, and its per-paper driver on the CPU (the GPU run needs a GPU)."""

import json
import os
import subprocess
import sys
import time
from pathlib import Path

import pytest
import torch

from dml_core.gpu_check import smoke
from dml_core.gpu_check.part import CheckContext, PartStopped
from dml_core.gpu_check.smoke import CACHE_RUNS_PER_PAPER, code_path, job_problems, smoke_jobs
from dml_core.results import load_results
from dml_core.runner.plan import paper_runs, plan_runs
from dml_core.tier import Tier
from dml_core.vocabulary import PAPER_KEYS
from tests.processes import completed_report

ROOT = Path(__file__).resolve().parents[2]


def test_every_paper_runs_one_run_per_code_path_on_pil_and_its_first_runs_on_cache():
    jobs = smoke_jobs()
    assert [(job.paper, job.pipeline) for job in jobs] == [(k, p) for k in PAPER_KEYS for p in ("pil", "cache")]
    for job in jobs:
        runs = paper_runs(ROOT / "reproduce", job.paper)[0]
        ids = [run.id for run in runs]
        if job.pipeline == "pil":
            paths = {run.id: code_path(run) for run in runs}
            chosen = [paths[run_id] for run_id in job.only]
            assert len(set(chosen)) == len(chosen) == len(set(paths.values())) >= 2  # each path once, every path
            assert list(job.only) == sorted(job.only, key=ids.index)  # the first run of each, in id order
        else:
            assert list(job.only) == ids[:CACHE_RUNS_PER_PAPER] and len(job.only) >= 2


def test_runs_differing_in_a_number_or_the_dataset_share_a_code_path_and_a_mode_does_not():
    runs = {run.id: run for run in paper_runs(ROOT / "reproduce", "damlrrm")[0]}
    assert code_path(runs["ours-cub200"]) == code_path(runs["ours-sop"])  # the same method on two datasets
    assert code_path(runs["ours-cub200"]) != code_path(runs["npair-cub200"])  # another loss


def test_a_job_is_judged_on_errors_failed_runs_run_count_and_device():
    good = {"deep_runs": 3, "devices": {"cuda:0": 3}, "trained": 3, "failed": {}}
    assert job_problems("gpw/pil", good, "cuda") == []
    assert job_problems("gpw/pil", {"error": "the gpw/pil smoke tier exited 1: boom"}, "cuda") == [
        "the gpw/pil smoke tier exited 1: boom"
    ]
    bad = {"deep_runs": 1, "devices": {"cpu": 1}, "trained": 1, "failed": {"x seed 0": "non-finite loss"}}
    assert job_problems("gpw/cache", bad, "cuda") == [
        "gpw/cache: x seed 0 failed: non-finite loss",
        "gpw/cache: 1 run(s) trained in its process, expected at least 2",
        "gpw/cache: runs trained on {'cpu': 1}, not cuda",
    ]


@pytest.mark.slow
@pytest.mark.usefixtures("glyph_data_root")
def test_the_driver_trains_a_papers_runs_in_one_process_with_loader_workers(tmp_path):
    only = [run.id for run in paper_runs(ROOT / "reproduce", "damlrrm")[0][:2]]
    command = [
        sys.executable, "-m", "dml_core.gpu_check.smoke_tier", "damlrrm", "--pipeline", "cache", "--out",
        str(tmp_path / "out"), "--data-root", str(tmp_path / "data"), "--device", "cpu", "--only", *only,
    ]  # fmt: skip
    environment = {**os.environ, "PYTHONPATH": str(ROOT), "HF_HUB_OFFLINE": "1", "OMP_NUM_THREADS": "1"}
    completed = subprocess.run(command, capture_output=True, text=True, env=environment, timeout=600)
    assert completed.returncode == 0, completed_report(completed)
    summary = json.loads((tmp_path / "out" / "summary.json").read_text())
    assert summary == {"deep_runs": 2, "devices": {"cpu": 2}, "trained": 2, "failed": {}}
    deep = paper_runs(ROOT / "reproduce", "damlrrm", only)[0]
    plans = plan_runs("damlrrm", deep, None, Tier.SMOKE, tmp_path / "r", tmp_path / "s", pipeline="cache")
    for plan in plans:  # each run is the one `dml reproduce damlrrm --smoke --pipeline cache` plans (same hash)
        results = load_results(tmp_path / "out" / "results" / "smoke" / "damlrrm" / plan.results_path.name)
        assert results.recipe.sha256 == plan.recipe.content_hash()
        assert results.recipe.content["data"]["num_workers"] == 2  # loaded by workers, as full-scale runs are
    assert (tmp_path / "out" / "tables" / "smoke" / "damlrrm.md").is_file()


def test_a_job_the_time_limit_stopped_is_judged_only_on_the_device_of_what_it_trained():
    stopped = {"stopped": "time limit reached: the gpw/pil smoke tier stopped after 60 s", "deep_runs": 1}
    assert job_problems("gpw/pil", {**stopped, "devices": {"cuda:0": 1}}, "cuda") == []
    assert job_problems("gpw/pil", {**stopped, "deep_runs": 0, "devices": {}}, "cuda") == []
    assert job_problems("gpw/pil", {**stopped, "devices": {"cpu": 1}}, "cuda") == [
        "gpw/pil: runs trained on {'cpu': 1}, not cuda"
    ]


def test_the_part_stops_at_the_time_limit_with_every_jobs_record(tmp_path, monkeypatch):
    def job_record(job, context, threads):
        if job.paper == "cgml":  # the last paper's jobs: the limit came while they trained
            return {"stopped": "time limit reached", "deep_runs": 1, "devices": {"cuda:0": 1}, "seconds": 9}
        return {"deep_runs": 2, "devices": {"cuda:0": 2}, "trained": 2, "failed": {}, "seconds": 5}

    monkeypatch.setattr(smoke, "ensure_generated", lambda spec, root: None)
    monkeypatch.setattr(smoke, "_run_job", job_record)
    context = CheckContext(torch.device("cuda"), tmp_path / "work", tmp_path / "data", tmp_path)
    with pytest.raises(PartStopped) as stopped:
        smoke.run_smoke(context)
    assert stopped.value.reason == (
        "8 of 10 (paper, pipeline) jobs finished with no failure, 18 runs trained; stopped: cgml/pil, cgml/cache"
    )
    assert set(stopped.value.figures["jobs"]) == {f"{key}/{p}" for key in PAPER_KEYS for p in ("pil", "cache")}


def test_a_job_the_time_limit_ends_before_it_starts_records_no_runs(tmp_path):
    context = CheckContext(
        torch.device("cuda"), tmp_path / "work", tmp_path / "data", tmp_path, deadline=time.monotonic() - 1
    )
    record = smoke._run_job(smoke.SmokeJob("gpw", "pil", ("pair-e-cub200",)), context, threads=1)
    assert record["stopped"].startswith("time limit reached before the gpw/pil smoke tier started")
    assert record["deep_runs"] == 0 and record["devices"] == {}
