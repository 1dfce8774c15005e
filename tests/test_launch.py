"""Fan-out of a paper's runs as submitit jobs (``dml reproduce --launcher``).

Slurm without a cluster: fake ``srun``/``sbatch`` on PATH record the sbatch script submitit writes (nothing is
submitted anywhere). Local: submitit's LocalExecutor really spawns each job as a subprocess that trains a tiny
smoke recipe; the tests check the results land where the inline runner writes them, the tables are built, a
failing job is reported with its error and log while the others finish, finished runs are skipped, and
``--no-wait`` returns before the jobs end, and a job of several tasks (Slurm's one per GPU) exports the
torch.distributed variables the trainer reads.
"""

import json
import os
import stat
import time
from pathlib import Path
from types import SimpleNamespace

import pytest
import submitit
import threadpoolctl
import torch
from submitit.core.utils import DelayedSubmission

import dml_core
from dml_core.cli import main
from dml_core.errors import InputError
from dml_core.runner.inline import PaperRun
from dml_core.runner.jobs import (
    JobResources,
    TrainJob,
    executor_parameters,
    launch_paper,
    make_executor,
    parse_slurm_params,
    read_submissions,
)
from dml_core.tables.gate.long_form import read_long_form
from dml_core.tier import Tier
from tests.tables.synthetic import PAPER_KEY, TINY_SMOKE, write_papers_dir, write_recipe

SOURCE_ROOT = Path(dml_core.__file__).resolve().parents[1]


def _paper(tmp_path: Path, broken: bool = False) -> list[str]:
    """A synthetic paper of two tiny recipes (and one whose training fails at once); the CLI arguments."""
    recipes = tmp_path / "reproduce"
    write_recipe(recipes, **TINY_SMOKE)
    write_recipe(recipes, id="lifted-cub200", targets=[{"table": "table1", "row": "lifted-cub200"}], **TINY_SMOKE)
    if broken:  # passes the preflight; train() refuses it (best-R@1 selection without Recall)
        evaluation = {**TINY_SMOKE["evaluation"], "metrics": ["nmi"]}
        write_recipe(recipes, **{**TINY_SMOKE, "id": "broken-cub200", "evaluation": evaluation})
    return [
        "reproduce", PAPER_KEY, "--smoke", "--no-progress", "--recipes", str(recipes),
        "--runs", str(tmp_path / "runs"), "--results", str(tmp_path / "results"), "--tables", str(tmp_path / "tables"),
        "--papers-dir", str(write_papers_dir(tmp_path)), "--data-root", str(tmp_path / "data"),
    ]  # fmt: skip


def _results(tmp_path: Path, recipe_id: str) -> Path:
    return tmp_path / "results" / "smoke" / PAPER_KEY / f"{recipe_id}-seed0.json"


def _table_rows(tmp_path: Path) -> dict[str, str]:
    """recipe id -> the seeds of its runs in the smoke long form of the synthetic paper ("—": no results)."""
    frame = read_long_form(tmp_path / "tables" / "smoke" / f"{PAPER_KEY}.csv")
    return {recipe: seeds or "—" for recipe, seeds in zip(frame["recipe"], frame["seeds"], strict=True)}


def test_slurm_params_and_resources_map_to_submitit():
    assert parse_slurm_params(["constraint=a100", "exclusive"]) == {"constraint": "a100", "exclusive": True}
    with pytest.raises(InputError, match=r"--slurm-param: expected KEY=VALUE .* found '--time=5'"):
        parse_slurm_params(["--time=5"])
    resources = JobResources(gpus_per_job=2, timeout_min=90, mem_gb=32.0, partition="gpu", slurm_params={"a": "b"})
    assert executor_parameters("slurm", resources, "dml-x") == {
        "name": "dml-x", "timeout_min": 90, "nodes": 1, "gpus_per_node": 2, "tasks_per_node": 2,
        "cpus_per_task": None, "mem_gb": 32.0, "slurm_partition": "gpu", "slurm_account": None,
        "slurm_qos": None, "slurm_additional_parameters": {"a": "b"},
    }  # fmt: skip
    local = executor_parameters("local", resources, "dml-x")
    assert local["tasks_per_node"] == 1 and not any(name.startswith("slurm_") for name in local)
    with pytest.raises(InputError, match="--gpus-per-job: expected 1 or more, found 0"):
        executor_parameters("slurm", JobResources(gpus_per_job=0), "dml-x")


def test_job_flags_need_a_launcher_that_reads_them(tmp_path, capsys):
    args = _paper(tmp_path)
    assert main([*args, "--partition", "gpu"]) == 2
    assert "--partition: only with --launcher local or slurm (found --launcher inline)" in capsys.readouterr().err
    assert main([*args, "--launcher", "local", "--qos", "high", "--gpus-per-job", "2"]) == 2
    assert "--qos: only with --launcher slurm (found --launcher local)" in capsys.readouterr().err
    assert not (tmp_path / "runs").exists()


def _fake_slurm(tmp_path: Path, monkeypatch) -> Path:
    """``srun`` and ``sbatch`` stand-ins on PATH: sbatch copies the script it is given and answers a job id."""
    bin_dir, record = tmp_path / "fake-slurm", tmp_path / "sbatch-scripts"
    bin_dir.mkdir()
    record.mkdir()
    scripts = {
        "srun": "#!/bin/sh\nexit 0\n",
        "sbatch": f'#!/bin/sh\ncp "$1" {record}/\necho "Submitted batch job 4242"\n',
    }
    for name, text in scripts.items():
        (bin_dir / name).write_text(text)
        (bin_dir / name).chmod(stat.S_IRWXU)
    monkeypatch.setenv("PATH", f"{bin_dir}{os.pathsep}{os.environ['PATH']}")
    return record


def test_slurm_submits_one_array_with_the_requested_resources(tmp_path, monkeypatch, capsys):
    record = _fake_slurm(tmp_path, monkeypatch)
    slurm = [
        "--launcher", "slurm", "--no-wait", "--partition", "gpu", "--gpus-per-job", "4", "--timeout-min", "600",
        "--cpus-per-task", "8", "--mem-gb", "64", "--account", "lab", "--qos", "high",
        "--slurm-param", "constraint=a100",
    ]  # fmt: skip
    assert main([*_paper(tmp_path), *slurm]) == 0
    out = capsys.readouterr().out
    assert "2 jobs submitted, 0 still queued or running from earlier, 0 skipped (finished)" in out
    assert "lifted-cub200 seed 0: job 4242_0" in out and "ours-cub200 seed 0: job 4242_1" in out
    (script,) = record.iterdir()
    lines = script.read_text().splitlines()
    for line in [
        "#SBATCH --partition=gpu", "#SBATCH --gpus-per-node=4", "#SBATCH --ntasks-per-node=4", "#SBATCH --nodes=1",
        "#SBATCH --time=600", "#SBATCH --cpus-per-task=8", "#SBATCH --mem=64GB", "#SBATCH --account=lab",
        "#SBATCH --qos=high", "#SBATCH --constraint=a100", "#SBATCH --array=0-1%2", "#SBATCH --job-name=dml-damlrrm",
    ]:  # fmt: skip
        assert line in lines
    command = lines[-1]  # srun ... env PYTHONPATH=<this dml_core's checkout>:... python -u -m submitit.core._submit
    assert command.startswith("srun ") and f"env PYTHONPATH={SOURCE_ROOT}" in command
    assert "-m submitit.core._submit" in command
    # Each array element's pickle is the job: train that plan (resumable).
    folder = tmp_path / "runs" / "smoke" / "submitit" / PAPER_KEY
    job = DelayedSubmission.load(folder / "4242_1" / "4242_1_submitted.pkl").function
    assert isinstance(job, TrainJob) and job.plan.recipe.id == "ours-cub200" and job.plan.tier == Tier.SMOKE
    assert job.plan.results_path == _results(tmp_path, "ours-cub200")

    # Again, while Slurm (sacct) says one element still runs and the other ended without results: only the
    # ended one is submitted again.
    sacct = tmp_path / "fake-slurm" / "sacct"
    sacct.write_text("#!/bin/sh\nprintf 'JobID|State|NodeList\\n4242_0|FAILED|n1\\n4242_1|RUNNING|n1\\n'\n")
    sacct.chmod(stat.S_IRWXU)
    assert main([*_paper(tmp_path), *slurm]) == 0
    out = capsys.readouterr().out
    assert "ours-cub200 seed 0: still queued or running as slurm job 4242_1, not submitted again" in out
    assert "1 jobs submitted, 1 still queued or running from earlier, 0 skipped (finished)" in out
    assert "  lifted-cub200 seed 0: job 4242\n" in out and "  ours-cub200 seed 0: job 4242_1 (submitted earlier)" in out


def test_slurm_needs_a_cluster(tmp_path, monkeypatch, capsys):
    monkeypatch.setenv("PATH", str(tmp_path))  # no srun
    assert main([*_paper(tmp_path), "--launcher", "slurm"]) == 2
    assert 'error: --launcher slurm: Could not detect "srun"' in capsys.readouterr().err


@pytest.fixture
def one_thread_jobs(monkeypatch):
    """Local jobs inherit this environment: one OpenMP thread each (several share the machine's cores)."""
    monkeypatch.setenv("OMP_NUM_THREADS", "1")
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")


@pytest.mark.slow
@pytest.mark.usefixtures("glyph_data_root")
def test_local_jobs_train_report_a_failure_build_tables_then_skip(tmp_path, capsys, one_thread_jobs):
    args = [*_paper(tmp_path, broken=True), "--launcher", "local", "--timeout-min", "10"]
    assert main(args) == 1  # one job failed
    out = capsys.readouterr().out
    assert "2 trained, 0 skipped (finished), 1 failed" in out
    failure = next(line for line in out.splitlines() if line.startswith("  FAILED broken-cub200 seed 0: "))
    assert "InputError: recipe broken-cub200: evaluation.selection 'best_r1' needs 'recall'" in failure
    log = Path(failure.split("(log: ")[1].rstrip(")"))
    assert log.is_file() and "best_r1" in log.read_text()
    for recipe_id in ("ours-cub200", "lifted-cub200"):  # where the inline runner writes them
        assert _results(tmp_path, recipe_id).is_file()
        assert (tmp_path / "runs" / "smoke" / PAPER_KEY / f"{recipe_id}-seed0").is_dir()
    assert _table_rows(tmp_path) == {"lifted-cub200": "0", "ours-cub200": "0", "broken-cub200": "—"}
    jobs = tmp_path / "runs" / "smoke" / "submitit" / PAPER_KEY
    submitted = sorted(jobs.glob("*/*_submitted.pkl"))  # one folder per job id
    assert len(submitted) == 3

    assert main([*args, "--only", "ours-cub200", "lifted-cub200"]) == 0
    assert "0 trained, 2 skipped (finished), 0 failed" in capsys.readouterr().out
    assert sorted(jobs.glob("*/*_submitted.pkl")) == submitted  # nothing submitted


@pytest.mark.slow
@pytest.mark.usefixtures("glyph_data_root")
def test_no_wait_returns_a_job_that_is_not_submitted_again_while_it_runs_and_is_picked_up_later(
    tmp_path, capsys, one_thread_jobs
):
    _paper(tmp_path)
    paper = PaperRun(
        PAPER_KEY, recipes_dir=tmp_path / "reproduce", runs_root=tmp_path / "runs", results_root=tmp_path / "results",
        tables_root=tmp_path / "tables", tier=Tier.SMOKE, only=["ours-cub200"], progress=False,
    )  # fmt: skip
    resources = JobResources(timeout_min=10)
    started = time.monotonic()
    first = launch_paper(paper, launcher="local", wait=False, resources=resources)
    submitted_in = time.monotonic() - started
    (job,) = first.jobs.values()
    assert first.tables is None and not first.trained and submitted_in < 20
    assert not job.done()  # still starting: a job imports torch and trains for seconds
    assert f"ours-cub200 seed 0: submitted as local job {job.job_id}" in capsys.readouterr().out

    again = launch_paper(paper, launcher="local", wait=False, resources=resources)  # the job is still starting
    assert not again.jobs and again.running == {"ours-cub200 seed 0": job.job_id}
    assert f"ours-cub200 seed 0: still queued or running as local job {job.job_id}, not submitted again" in (
        capsys.readouterr().out
    )
    waited = launch_paper(paper, launcher="local", wait=True, resources=resources, poll_s=0.2)
    assert not waited.jobs and waited.trained == ["ours-cub200 seed 0"] and waited.tables is not None
    assert job.exception() is None and _results(tmp_path, "ours-cub200").is_file()
    folder = tmp_path / "runs" / "smoke" / "submitit" / PAPER_KEY
    assert len(list(folder.glob("*/*_submitted.pkl"))) == 1  # one job in all
    assert json.loads((folder / "submissions.json").read_text()) == {
        "ours-cub200 seed 0": {"launcher": "local", "job_id": job.job_id}
    }
    # Ended: the next call skips the finished run (no job asked about, none submitted), and a tables run reads it.
    assert launch_paper(paper, launcher="local", wait=False, resources=resources).skipped == ["ours-cub200 seed 0"]
    folders = ["--recipes", str(tmp_path / "reproduce"), "--results", str(tmp_path / "results")]
    folders += ["--tables", str(tmp_path / "tables"), "--papers-dir", str(tmp_path / "papers")]
    assert main(["tables", "--paper", PAPER_KEY, "--smoke", "--no-plots", *folders]) == 0
    assert _table_rows(tmp_path) == {"ours-cub200": "0", "lifted-cub200": "—"}


def test_a_damaged_submissions_record_is_refused_naming_it(tmp_path):
    (tmp_path / "submissions.json").write_text('{"run seed 0": {"job_id": "1"}}')
    with pytest.raises(InputError, match=r"submissions\.json: expected run name -> \{launcher, job_id\}"):
        read_submissions(tmp_path)


class _ReportRank(PaperRun):
    """A paper whose "training" returns the torch.distributed variables its task sees (JSON)."""

    def train(self, plan):
        names = ("RANK", "LOCAL_RANK", "WORLD_SIZE", "MASTER_ADDR", "MASTER_PORT", "CUDA_VISIBLE_DEVICES")
        return json.dumps({name: os.environ.get(name) for name in names})


@pytest.mark.slow
def test_a_job_of_several_tasks_exports_the_torch_distributed_environment(tmp_path, one_thread_jobs):
    executor = make_executor("local", tmp_path / "jobs", JobResources(gpus_per_job=2, timeout_min=5), "dml-test")
    executor.update_parameters(tasks_per_node=2)  # what Slurm runs for --gpus-per-job 2 (local jobs run one task)
    paper = _ReportRank(
        PAPER_KEY, recipes_dir=tmp_path, runs_root=tmp_path, results_root=tmp_path, tables_root=tmp_path, device="cpu"
    )
    plan = SimpleNamespace(name="tiny seed 0", run_dir=tmp_path)  # what the job's first line names
    tasks = [json.loads(result) for result in executor.submit(TrainJob(paper, plan=plan)).results()]
    assert [(task["RANK"], task["LOCAL_RANK"], task["WORLD_SIZE"]) for task in tasks] == [
        ("0", "0", "2"),
        ("1", "1", "2"),
    ]
    assert tasks[0]["MASTER_ADDR"] == tasks[1]["MASTER_ADDR"] and tasks[0]["MASTER_PORT"] == tasks[1]["MASTER_PORT"]
    assert {task["CUDA_VISIBLE_DEVICES"] for task in tasks} == {
        "0,1"
    }  # every GPU visible; LOCAL_RANK picks, as torchrun


class _ReportThreads(PaperRun):
    """A paper whose "training" returns the CPU threads it would train on: torch's and each BLAS / OpenMP pool's."""

    def train(self, plan):
        pools = sorted({pool["num_threads"] for pool in threadpoolctl.threadpool_info()})
        return json.dumps({"torch": torch.get_num_threads(), "pools": pools})


@pytest.mark.parametrize("mini", [True, False])
def test_a_mini_job_trains_on_one_cpu_thread_as_the_pages_runs_do(tmp_path, mini):
    before = torch.get_num_threads(), threadpoolctl.threadpool_info()
    paper = _ReportThreads(
        PAPER_KEY,
        recipes_dir=tmp_path,
        runs_root=tmp_path,
        results_root=tmp_path,
        tables_root=tmp_path,
        tier=Tier.MINI if mini else Tier.FULL,
        device="cpu",  # a full-scale job refuses to fall back to the CPU unasked
    )
    plan = SimpleNamespace(name="tiny seed 0", run_dir=tmp_path)  # what the job's first line names
    # submitit's debug executor runs the job in this process, as a job environment
    seen = json.loads(submitit.DebugExecutor(tmp_path / "jobs").submit(TrainJob(paper, plan=plan)).result())
    if mini:
        assert seen == {"torch": 1, "pools": [1]}
    else:  # a full-scale job keeps what the machine gives it
        assert seen["torch"] == before[0]
    assert (torch.get_num_threads(), threadpoolctl.threadpool_info()) == before  # the job leaves this process as it was
