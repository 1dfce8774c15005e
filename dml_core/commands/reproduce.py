"""``dml reproduce KEY``: train every recipe of a paper (resumable), write results, build its tables.

``--launcher local|slurm`` submits each run as a job instead of training here (``dml_core.runner.jobs``)."""

from __future__ import annotations

import argparse
from pathlib import Path
from typing import TYPE_CHECKING

from dml_core.command_line import DML
from dml_core.commands.options import (
    add_max_steps_option,
    add_reading_option,
    add_run_options,
    add_tier_flags,
    chosen_tier,
    non_negative_int,
    positive_float,
    positive_int,
    run_options,
)
from dml_core.error_boundary import FAILED_RUN, NOT_ALL_RUN
from dml_core.errors import InputError
from dml_core.vocabulary import RECIPE_KEYS

if TYPE_CHECKING:  # imported when run: torch is heavy for `dml --help`
    from dml_core.runner.inline import PaperRun
    from dml_core.runner.jobs import LaunchReport


def add_parser(subparsers) -> None:
    parser = subparsers.add_parser(
        "reproduce",
        description="Print the plan (the runs with their expected hours and its source, each input and its state, "
        "the disk each stage needs against the free space), fetch the datasets and weight files the selected runs "
        "need and lack (unless --no-download; a killed fetch resumes), check that they are here (each still missing "
        "one named with the runs it blocks and the command that provides it; --skip-missing trains the others), "
        "train each recipe x seed (interrupted runs resume, "
        "finished ones are skipped unless --rerun), write "
        "results/KEY/<id>-seed<N>.json and build tables/KEY.md. Linear plans (reproduce/KEY/linear/*.yaml: anml "
        "Table 2) run after the recipes, into the same results folder (--only takes their ids too; --seeds applies "
        "to recipes only). --smoke: the same recipes shrunk to the embedded dataset on the CPU, the linear plans to "
        "2 splits and a one-point grid (results/smoke/, tables/smoke/; not comparable with the paper). --mini: the "
        "paper's headline comparison (reproduce/KEY/mini.yaml) shrunk to the embedded_mini glyphs and a narrowed "
        "backbone on the CPU, seeds 0-2, each evaluated before and after training (results/mini/, tables/mini/: "
        "does each recipe learn; not a reproduction). Each run's line gives an ETA for the runs left, from the pace "
        "of the runs trained so far. KEY fair: the study of the five papers' methods and the classic baselines under "
        "one protocol (papers/fair/method.md): every run over the seeds of reproduce/fair/study.yaml, tables/fair.md; "
        "--mini: its runs of one data set on the embedded_mini glyphs, seeds 0-2, tables/mini/fair.md.",
    )
    parser.add_argument("paper", choices=RECIPE_KEYS)
    add_tier_flags(
        parser,
        smoke_help="CPU smoke versions of the recipes",
        mini_help="CPU mini tier: the headline comparison of reproduce/KEY/mini.yaml, learned on the embedded_mini "
        "glyphs (seeds 0-2 unless --seeds); 10-22 minutes a paper on 2 cores",
    )
    parser.add_argument(
        "--workers",
        type=positive_int,
        help="with --mini: train this many runs side by side, each in its own process on one CPU thread (default: "
        "one per CPU core, 1 when the runs go to a GPU); the numbers do not depend on it",
    )
    parser.add_argument(
        "--seeds", type=non_negative_int, nargs="+", help="seeds to run (default: each recipe's training.seed)"
    )
    parser.add_argument("--only", nargs="+", default=[], metavar="ID", help="only these run ids")
    _add_plan_and_input_arguments(parser)
    add_max_steps_option(parser)
    parser.add_argument(
        "--rerun",
        action="store_true",
        help="train finished runs again for fresh numbers (a finished run's checkpoint starts over, an interrupted "
        "rerun continues); each results file is replaced atomically once its new one is complete, so an "
        f"interrupted rerun leaves the old numbers in place (--launcher inline only; `{DML} nightly` re-runs "
        "everything into a folder of its own instead)",
    )
    add_reading_option(
        parser,
        "run the runs that rest on reading NAME under VALUE instead of its default (repeatable; "
        f"`{DML} recipes readings KEY` lists them); results go beside the default's, named <id>~NAME=VALUE",
    )
    add_run_options(parser)
    _add_launcher_arguments(parser)
    parser.set_defaults(run=run)


def _add_plan_and_input_arguments(parser: argparse.ArgumentParser) -> None:
    """The plan's flags and what happens to the inputs the runs need: fetched, or left out."""
    parser.add_argument(
        "--skip-missing",
        action="store_true",
        help="train the runs whose datasets and weight files are here and leave out the others (the closing "
        "summary names them, and the exit status is 3 when any was left out and none failed); without it a "
        "missing input stops the paper before anything trains",
    )
    parser.add_argument(
        "--no-download",
        action="store_true",
        help="fetch nothing: the datasets and weight files the runs need must be here (an offline box, CI); without "
        "it, each one missing is fetched after the plan is printed (the datasets from the catalog of sources, "
        "resumable; the weight files of the backbones these runs load, and no others)",
    )
    parser.add_argument(
        "--plan",
        action="store_true",
        help="print the plan (runs, inputs and their state, disk, expected hours) and exit 0: nothing is checked, "
        "built or trained",
    )
    parser.add_argument(
        "--calibrate",
        action=argparse.BooleanOptionalAction,
        default=None,
        help="time each distinct training shape of the runs (backbone, batch, crop, precision, pipeline, loss) for "
        "a few steps on synthetic batches here and give each run's hours from that (default: on a GPU at full "
        "scale before training, not with --plan); without it the hours rest on committed measurements, a cost "
        "model scaled from one, or the paper's published time, each run's line says which",
    )


# Flags that only mean something when jobs are submitted, and those only Slurm reads (argparse dest names).
_JOB_FLAGS = ("wait", "gpus_per_job", "timeout_min", "cpus_per_task", "mem_gb", "job_folder")
_SLURM_FLAGS = ("partition", "account", "qos", "slurm_params")


def _add_launcher_arguments(parser: argparse.ArgumentParser) -> None:
    group = parser.add_argument_group(
        "jobs (--launcher local or slurm)",
        "Submit every unfinished run as a job through submitit instead of training here. Slurm jobs write "
        "where this command would (runs/, results/, tables/): those folders and the repository must be on a "
        "file system the nodes share.",
    )
    group.add_argument(
        "--launcher",
        choices=("inline", "local", "slurm"),
        default="inline",
        help="inline: train here, one run after the other (default); local: every run as a subprocess job of "
        "this machine (tests); slurm: every run as a Slurm job (one job array)",
    )
    group.add_argument(
        "--wait",
        action=argparse.BooleanOptionalAction,
        default=None,
        help="wait for the jobs, report each, build the tables (default); --no-wait: print the job ids and return "
        "(re-run the command any time: running jobs are not submitted again, finished runs are skipped)",
    )
    group.add_argument(
        "--gpus-per-job",
        type=positive_int,
        help="GPUs per run (default 1); Slurm starts one task per GPU, as torch.distributed ranks",
    )
    group.add_argument(
        "--timeout-min", type=positive_int, help="time limit per job in minutes (default 1440; requeued)"
    )
    group.add_argument("--cpus-per-task", type=positive_int, help="CPU cores per task (data loading workers)")
    group.add_argument("--mem-gb", type=positive_float, help="memory per node in GB")
    group.add_argument("--job-folder", type=Path, help="job pickles and logs (default: RUNS/[smoke/]submitit/KEY)")
    group.add_argument("--partition", help="Slurm partition")
    group.add_argument("--account", help="Slurm account")
    group.add_argument("--qos", help="Slurm quality of service")
    group.add_argument(
        "--slurm-param",
        dest="slurm_params",
        action="append",
        metavar="KEY=VALUE",
        help="any other sbatch option, e.g. --slurm-param constraint=a100 (repeatable)",
    )


def _check_workers_flag(args: argparse.Namespace) -> None:
    if args.workers is not None and not args.mini:
        raise InputError(f"--workers {args.workers}: only with --mini (the CPU tier whose runs train side by side)")
    if args.workers is not None and args.launcher != "inline":
        raise InputError(f"--workers: only with --launcher inline (found --launcher {args.launcher})")


def _check_launcher_flags(args: argparse.Namespace) -> None:
    """Refuse job flags the chosen launcher would silently ignore, and --rerun with jobs (a job is not submitted
    for a run whose results file exists)."""
    if args.rerun and args.launcher != "inline":
        raise InputError(f"--rerun: only with --launcher inline (found --launcher {args.launcher})")
    ignored = [name for name in _JOB_FLAGS + _SLURM_FLAGS if getattr(args, name) is not None]
    if args.launcher == "local":
        ignored = [name for name in ignored if name in _SLURM_FLAGS]
    elif args.launcher == "slurm":
        ignored = []
    if ignored:
        flags = ", ".join("--" + ("slurm-param" if n == "slurm_params" else n.replace("_", "-")) for n in ignored)
        needed = "slurm" if args.launcher == "local" else "local or slurm"
        raise InputError(f"{flags}: only with --launcher {needed} (found --launcher {args.launcher})")


def run(args: argparse.Namespace) -> int:
    # Here, not at the top: the runner loads torch; `dml reproduce --help` stays light.
    from dml_core.recipes import parse_reading_choices
    from dml_core.runner.inline import PaperRun, reproduce

    _check_launcher_flags(args)
    _check_workers_flag(args)
    paper = PaperRun(
        args.paper,
        tier=chosen_tier(args),
        workers=args.workers,
        seeds=args.seeds,
        only=args.only,
        readings=parse_reading_choices(args.readings),
        rerun=args.rerun,
        skip_missing=args.skip_missing,
        download=not args.no_download,
        max_steps=args.max_steps,
        calibrate=args.calibrate,
        **run_options(args),
    )
    if args.plan:
        print("\n".join(paper.plan_without_training()))
        return 0
    if args.launcher == "inline":
        report = reproduce(paper)
    else:
        report = _launch(args, paper)
        if report.tables is None:  # --no-wait, jobs submitted
            print(
                f"{args.paper}: {len(report.jobs)} jobs submitted, {len(report.running)} still queued or running "
                f"from earlier, {len(report.skipped)} skipped (finished); logs under {report.job_folder}. Run this "
                "command again at any time: runs whose jobs are still queued or running are not submitted again, "
                f"and once all have ended the tables are built (or `{DML} tables --paper {args.paper}"
                f"{' --smoke' if args.smoke else ''}`)."
            )
            for name, job in report.jobs.items():
                print(f"  {name}: job {job.job_id}")
            for name, job_id in report.running.items():
                print(f"  {name}: job {job_id} (submitted earlier)")
            for name, reason in report.not_run.items():
                print(f"  NOT RUN {name}: {reason}")
            return NOT_ALL_RUN if report.not_run else 0
    not_run = f", {len(report.not_run)} not run (missing inputs)" if report.not_run else ""
    print(
        f"{args.paper}: {len(report.trained)} trained, {len(report.skipped)} skipped (finished), "
        f"{len(report.failed)} failed{not_run}"
    )
    for name, reason in report.failed.items():
        print(f"  FAILED {name}: {reason}")
    for name, reason in report.not_run.items():
        print(f"  NOT RUN {name}: {reason}")
    return FAILED_RUN if report.failed else NOT_ALL_RUN if report.not_run else 0


def _launch(args: argparse.Namespace, paper: PaperRun) -> LaunchReport:
    # Here, not at the top: submitit is needed only with --launcher.
    from dml_core.runner.jobs import DEFAULT_TIMEOUT_MIN, JobResources, launch_paper, parse_slurm_params

    resources = JobResources(
        gpus_per_job=args.gpus_per_job or 1,
        timeout_min=args.timeout_min or DEFAULT_TIMEOUT_MIN,
        cpus_per_task=args.cpus_per_task,
        mem_gb=args.mem_gb,
        partition=args.partition,
        account=args.account,
        qos=args.qos,
        slurm_params=parse_slurm_params(args.slurm_params or []),
    )
    wait = True if args.wait is None else args.wait
    return launch_paper(paper, launcher=args.launcher, resources=resources, wait=wait, job_folder=args.job_folder)
