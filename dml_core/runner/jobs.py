"""Fan a paper's runs out as jobs: ``dml reproduce KEY --launcher slurm`` (or ``local``), through submitit.

Each unfinished recipe x seed becomes one job that trains it with ``resume=True`` (``TrainJob``), so a job cut by a
time limit or preemption continues from its checkpoint, and every submission is recorded (``submissions.json``) so
that running the command again submits nothing twice. ``local`` runs the jobs as subprocesses of this machine: it is
how the tests exercise the fan-out. Usage and what a cluster needs: docs/clusters.md.
"""

from __future__ import annotations

import contextlib
import os
import shlex
import subprocess
import sys
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path

import submitit
from submitit.core.utils import FailedJobError

from dml_core.atomic_io import atomic_write_json, read_json_object
from dml_core.command_line import DML
from dml_core.cpu_cores import one_cpu_thread
from dml_core.errors import InputError
from dml_core.output_paths import REPOSITORY_ROOT, jobs_folder
from dml_core.runner.inline import PaperRun, ReproduceReport
from dml_core.runner.plan import is_finished
from dml_core.tier import Tier
from dml_core.training.device_choice import describe_device
from dml_core.training.run_description import PlannedRun

# What submits jobs (``dml reproduce --launcher inline``, the default, is ``reproduce``: this process).
JOB_LAUNCHERS = ("local", "slurm")
DEFAULT_TIMEOUT_MIN = 24 * 60


@dataclass(frozen=True)
class JobResources:
    """What each job asks for. ``partition``, ``account``, ``qos`` and ``slurm_params`` are Slurm's only."""

    gpus_per_job: int = 1
    timeout_min: int = DEFAULT_TIMEOUT_MIN
    cpus_per_task: int | None = None
    mem_gb: float | None = None
    partition: str | None = None
    account: str | None = None
    qos: str | None = None
    slurm_params: Mapping[str, str | bool] = field(default_factory=dict)


@dataclass
class LaunchReport(ReproduceReport):
    """``ReproduceReport`` plus the submitted jobs (run name -> submitit job), the jobs of earlier submissions
    still queued or running (run name -> job id; not submitted again) and their log folder."""

    jobs: dict[str, submitit.Job] = field(default_factory=dict)
    running: dict[str, str] = field(default_factory=dict)
    job_folder: Path | None = None


SUBMISSIONS_NAME = "submissions.json"
# Slurm job states (sacct) in which a job still holds or waits for its allocation.
ACTIVE_SLURM_STATES = frozenset(
    {
        "PENDING",
        "CONFIGURING",
        "RUNNING",
        "COMPLETING",
        "REQUEUED",
        "REQUEUE_HOLD",
        "REQUEUE_FED",
        "RESIZING",
        "SUSPENDED",
    }
)


def read_submissions(job_folder: Path) -> dict[str, dict]:
    """Run name -> {"launcher", "job_id"} of every earlier submission from ``job_folder``."""
    path = job_folder / SUBMISSIONS_NAME
    if not path.is_file():
        return {}
    submissions = read_json_object(path, "record of submitted jobs")
    if not all(isinstance(entry, dict) and {"launcher", "job_id"} <= set(entry) for entry in submissions.values()):
        raise InputError(f"{path}: expected run name -> {{launcher, job_id}} for each run, found {submissions!r}")
    return submissions


def record_submissions(job_folder: Path, launcher: str, jobs: Mapping[str, submitit.Job]) -> None:
    submissions = read_submissions(job_folder)
    submissions.update({name: {"launcher": launcher, "job_id": job.job_id} for name, job in jobs.items()})
    atomic_write_json(job_folder / SUBMISSIONS_NAME, submissions)


def _process_alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    stat = Path(f"/proc/{pid}/stat")
    # An ended child its parent has not reaped yet (a zombie) still answers the signal.
    return not (stat.is_file() and stat.read_text().rsplit(")", 1)[-1].split()[0] == "Z")


def job_is_active(launcher: str, job_folder: Path, job_id: str) -> bool:
    """Whether a job submitted earlier is still queued or running: a local job is its controller process (its
    job id is the pid); a Slurm job is asked for its state (sacct, through submitit)."""
    if launcher == "local":
        return _process_alive(int(job_id))
    try:
        state = submitit.SlurmJob(folder=job_folder / "%j", job_id=job_id).state
    except (OSError, subprocess.CalledProcessError):  # no sacct here: the job cannot be asked, so submit anew
        return False
    return state.split()[0].upper() in ACTIVE_SLURM_STATES


def parse_slurm_params(items: Sequence[str]) -> dict[str, str | bool]:
    """``KEY=VALUE`` (or a bare ``KEY`` for a flag) -> extra sbatch options, written as ``#SBATCH --KEY=VALUE``.

    >>> parse_slurm_params(["constraint=a100", "exclusive", "mail-type=END"])
    {'constraint': 'a100', 'exclusive': True, 'mail-type': 'END'}
    """
    params: dict[str, str | bool] = {}
    for item in items:
        key, sep, value = item.partition("=")
        if not key or key.startswith("-"):
            raise InputError(f"--slurm-param: expected KEY=VALUE (an sbatch option without --), found {item!r}")
        params[key] = value if sep else True
    return params


def executor_parameters(launcher: str, resources: JobResources, job_name: str) -> dict:
    """``submitit.AutoExecutor.update_parameters`` arguments for one job of ``resources``.

    >>> params = executor_parameters("slurm", JobResources(gpus_per_job=4, partition="gpu"), "dml-anml")
    >>> params["gpus_per_node"], params["tasks_per_node"], params["slurm_partition"]
    (4, 4, 'gpu')
    >>> executor_parameters("local", JobResources(gpus_per_job=4), "dml-anml")["tasks_per_node"]
    1
    """
    if resources.gpus_per_job < 1:
        raise InputError(f"--gpus-per-job: expected 1 or more, found {resources.gpus_per_job}")
    params: dict = {
        "name": job_name,
        "timeout_min": resources.timeout_min,
        "nodes": 1,
        "gpus_per_node": resources.gpus_per_job,
        # One task per GPU on Slurm (each a torch.distributed rank); a local job is one process.
        "tasks_per_node": resources.gpus_per_job if launcher == "slurm" else 1,
        "cpus_per_task": resources.cpus_per_task,
        "mem_gb": resources.mem_gb,
    }
    if launcher == "slurm":
        params.update(
            slurm_partition=resources.partition,
            slurm_account=resources.account,
            slurm_qos=resources.qos,
            slurm_additional_parameters=dict(resources.slurm_params) or None,
        )
    return params


def job_python() -> str:
    """The command jobs start Python with: this interpreter, with the folder holding this ``dml_core`` first
    on PYTHONPATH, so a job unpickles and runs the code that submitted it (installed or a plain checkout)."""
    source_root = str(REPOSITORY_ROOT)
    python_path = os.pathsep.join(filter(None, [source_root, os.environ.get("PYTHONPATH")]))
    return shlex.join(["env", f"PYTHONPATH={python_path}", sys.executable])


def make_executor(launcher: str, folder: Path, resources: JobResources, job_name: str) -> submitit.Executor:
    """A submitit executor for ``launcher`` writing each job's files to ``<folder>/<job id>/``."""
    if launcher not in JOB_LAUNCHERS:
        raise InputError(f"--launcher: expected one of {', '.join(JOB_LAUNCHERS)} to submit jobs, found {launcher!r}")
    python = job_python()
    try:
        executor = submitit.AutoExecutor(
            folder=Path(folder).absolute() / "%j", cluster=launcher, slurm_python=python, local_python=python
        )
    except RuntimeError as error:  # SlurmExecutor refuses to start where there is no srun
        raise InputError(f"--launcher {launcher}: {error} (run this on the cluster's login node)") from None
    executor.update_parameters(**executor_parameters(launcher, resources, job_name))
    return executor


@dataclass(frozen=True)
class TrainJob(submitit.helpers.Checkpointable):
    """One job: train ``plan`` of ``paper``. Checkpointable: on a time-out or preemption (Slurm's warning signal)
    submitit resubmits this same call (requeue, at most 3 time-outs), which continues from the run's last checkpoint
    (``PaperRun.train`` trains with ``resume=True``). A mini run trains on one CPU thread, as the inline runner's
    workers do, so that its numbers are the page's."""

    paper: PaperRun
    plan: PlannedRun

    def __call__(self) -> str:
        if submitit.JobEnvironment().num_tasks > 1:
            # torchrun's convention, which the trainer expects: all of the node's GPUs visible, LOCAL_RANK picks.
            submitit.helpers.TorchDistributedEnvironment().export(set_cuda_visible_devices=False)
        with one_cpu_thread() if self.paper.tier == Tier.MINI else contextlib.nullcontext():
            device = self.paper.training_device()  # a full-scale job refuses to fall back to the CPU
            print(f"{self.plan.name}: training on {describe_device(device)} in {self.plan.run_dir}", flush=True)
            return str(self.paper.train(self.plan))


def job_error(error: Exception) -> str:
    """One line for a job's error: the exception line of its traceback, else the first lines submitit wrote.

    >>> trace = "Traceback (most recent call last):\\n  File x\\nValueError: bad"
    >>> job_error(FailedJobError(f"Job failed with trace:\\n{'-' * 22}\\n{trace}\\n{'-' * 22}\\nsee logs"))
    'ValueError: bad'
    """
    text = str(error)
    if isinstance(error, FailedJobError):
        parts = text.split("-" * 22)  # submitit puts the job's traceback between two such rules
        lines = [line.strip() for line in (parts[1] if len(parts) >= 3 else text).splitlines() if line.strip()]
        return lines[-1] if lines else type(error).__name__
    return " ".join(line.strip() for line in text.splitlines()[:2])  # e.g. killed: no result, with its state


def job_failure(job: submitit.Job, plan: PlannedRun) -> str | None:
    """Why the ended ``job`` did not produce ``plan``'s results (its error and log file), or None if it did."""
    error = job.exception()
    if error is not None:
        return f"{job_error(error)} (log: {job.paths.stderr})"
    if not is_finished(plan):
        return f"the job ended without writing {plan.results_path} (log: {job.paths.stderr})"
    return None


def launch_paper(
    paper: PaperRun,
    *,
    launcher: str,
    resources: JobResources | None = None,
    wait: bool = True,
    job_folder: Path | None = None,
    poll_s: float = 1.0,
    log: Callable[[str], None] = print,
) -> LaunchReport:
    """``reproduce(paper)`` with every unfinished run submitted as a job of ``launcher`` (``local``, ``slurm``).

    The preflight (missing datasets and weights, the tolerances file) runs before anything is submitted.
    ``wait``: wait for every job (checking every ``poll_s`` seconds), record each as trained or failed, then
    build the tables. Otherwise return once submitted, with the jobs in ``report.jobs`` (the tables are built
    only when there was nothing to submit).
    """
    plans, linear_runs, tolerances, not_run = paper.preflight(log)  # the plan's device: where each job runs
    if linear_runs:  # CPU work (anml Table 2): the inline runner does it; a GPU job would waste its GPU
        ids = " ".join(dict.fromkeys(run.plan_path.stem for run in linear_runs if run.plan_path))
        log(f"linear plans are not submitted as jobs: run them with `{DML} reproduce {paper.key} --only {ids}`")
    report = LaunchReport(
        job_folder=job_folder or jobs_folder(paper.output_roots[0], paper.key, paper.tier), not_run=dict(not_run)
    )
    todo, earlier = [], read_submissions(report.job_folder)
    for plan in plans:
        entry = earlier.get(plan.name)
        if not paper.trains_again and is_finished(plan):
            log(f"{plan.name}: finished earlier ({plan.results_path}), skipped")
            report.skipped.append(plan.name)
        elif entry and job_is_active(entry["launcher"], report.job_folder, entry["job_id"]):
            job = f"{entry['launcher']} job {entry['job_id']}"
            log(f"{plan.name}: still queued or running as {job}, not submitted again")
            report.running[plan.name] = entry["job_id"]
        else:
            todo.append(plan)
    plan_of_job: dict[str, PlannedRun] = {}
    if todo:
        job_name = f"dml-{paper.key}"
        executor = make_executor(launcher, report.job_folder, resources or JobResources(), job_name)
        with executor.batch():  # one submission (a job array on Slurm)
            jobs = [executor.submit(TrainJob(paper, plan)) for plan in todo]
        for plan, job in zip(todo, jobs, strict=True):
            report.jobs[plan.name] = job
            plan_of_job[job.job_id] = plan
            log(f"{plan.name}: submitted as {launcher} job {job.job_id} (logs in {job.paths.folder})")
        record_submissions(report.job_folder, launcher, report.jobs)
    if not wait and (todo or report.running):
        return report
    for job in submitit.helpers.as_completed(list(report.jobs.values()), poll_frequency=poll_s):
        plan = plan_of_job[job.job_id]
        failure = job_failure(job, plan)
        if failure is None:
            log(f"{plan.name}: finished (job {job.job_id}): {plan.results_path}")
            report.trained.append(plan.name)
        else:
            log(f"{plan.name}: FAILED (job {job.job_id}): {failure}")
            report.failed[plan.name] = failure
    _wait_for_earlier_jobs(report, {plan.name: plan for plan in plans}, earlier, poll_s, log)
    report.tables = paper.build_tables(tolerances, log)
    return report


def _wait_for_earlier_jobs(
    report: LaunchReport,
    plans: Mapping[str, PlannedRun],
    earlier: Mapping[str, dict],
    poll_s: float,
    log: Callable[[str], None],
) -> None:
    """Wait until the jobs of earlier submissions that were still running end; record each as trained or failed."""
    waiting = dict(report.running)
    while waiting:
        for name, job_id in list(waiting.items()):
            if job_is_active(earlier[name]["launcher"], report.job_folder, job_id):
                continue
            del waiting[name]
            plan = plans[name]
            if is_finished(plan):
                log(f"{name}: finished (job {job_id}, submitted earlier): {plan.results_path}")
                report.trained.append(name)
            else:
                failure = f"the job ended without writing {plan.results_path} (logs in {report.job_folder / job_id})"
                log(f"{name}: FAILED (job {job_id}, submitted earlier): {failure}")
                report.failed[name] = failure
        if waiting:
            time.sleep(poll_s)
