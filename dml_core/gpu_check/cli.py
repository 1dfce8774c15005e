"""``python3 -m dml_core.gpu_check [--parts P,...] [--rerun-failed] [--time-limit S] [--report-dir DIR] [--work-dir
DIR]``.

Runs the chosen parts (all by default) one after the other, writes the report after each (atomically, merged with
the parts an earlier call left in it), prints a table of every part and exits 1 when a part of this call failed
(each failure named), 2 on bad input. With ``--time-limit`` the call ends about then (a GPU lent for a few minutes
a call): a part starts only with the seconds it needs left (``Part.needs_seconds``), a part that trains in child
processes or in rounds stops at the limit keeping what it measured ("stopped: ..."), the rest are "skipped: time
limit"; none of that is a failure, and ``--rerun-failed`` in the next call goes on with them. The parts train in
a scratch folder (``--work-dir``, default a temporary one, removed when every part passed and kept, with the logs
the failures name, otherwise).
"""

from __future__ import annotations

import argparse
import shutil
import sys
import tempfile
import time
import traceback
from collections.abc import Mapping, Sequence
from pathlib import Path

import torch

from dml_core import provenance
from dml_core.errors import InputError
from dml_core.gpu_check.device import GpuState, probe_gpu
from dml_core.gpu_check.part import CheckContext, Part, PartFailed, PartSkipped, PartStopped
from dml_core.gpu_check.registry import PARTS
from dml_core.gpu_check.report import (
    NO_GPU,
    TIME_LIMITED,
    PartResult,
    load_report,
    report_path,
    summary_table,
    to_rerun,
    write_report,
)
from dml_core.output_paths import REPOSITORY_ROOT
from dml_core.registry import Registry


def build_parser(parts: Mapping[str, Part]) -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="python3 -m dml_core.gpu_check",
        description="Check that the GPU path works: "
        + "; ".join(f"{name}: {part.what}" for name, part in parts.items())
        + ". Without a usable GPU every part is skipped; a GPU torch cannot use fails every part.",
    )
    parser.add_argument("--parts", help=f"comma-separated parts to run (default: all: {','.join(parts)})")
    parser.add_argument(
        "--rerun-failed",
        action="store_true",
        help="run only those (of --parts, or all) that did not pass in this device's report; results are merged",
    )
    parser.add_argument(
        "--report-dir",
        type=Path,
        default=REPOSITORY_ROOT / "tables" / "benchmarks",
        help="where gpu-check-<device>.json (and the benchmark's JSON) go (default: tables/benchmarks)",
    )
    parser.add_argument("--work-dir", type=Path, help="scratch folder for the parts' runs (kept; default: temporary)")
    parser.add_argument(
        "--time-limit",
        type=positive_seconds,
        metavar="SECONDS",
        help="end the call about then (up to 30 s more to stop a child): a part starts only with the time it needs "
        "left, a training part stops at the limit keeping its figures; the next call's --rerun-failed goes on",
    )
    return parser


def positive_seconds(text: str) -> float:
    """``--time-limit``'s value: seconds, more than zero."""
    try:
        seconds = float(text)
    except ValueError:
        seconds = float("nan")
    if not seconds > 0 or seconds == float("inf"):
        raise argparse.ArgumentTypeError(f"expected a number of seconds above 0, found {text!r}")
    return seconds


def chosen_parts(text: str | None, parts: Mapping[str, Part]) -> list[str]:
    """The names ``--parts`` gives, in the registry's order; an unknown name is an ``InputError`` listing them."""
    if text is None:
        return list(parts)
    names = [name.strip() for name in text.split(",") if name.strip()]
    if not names:
        raise InputError(f"--parts: expected names among {', '.join(parts)}, found {text!r}")
    registry = parts if isinstance(parts, Registry) else Registry("part", "--parts", parts)
    for name in names:
        registry.lookup(name)
    return [name for name in parts if name in names]


def run_environment(gpu: GpuState) -> dict:
    """What a part ran on: torch, CUDA, the GPU, the commit, python (``provenance``'s record and the git state)."""
    return {**provenance.environment(), "git": provenance.git_state(), "gpu": gpu.name}


def run_part(part: Part, context: CheckContext, gpu: GpuState, environment: dict) -> PartResult:
    """One part's result: skipped or failed without running where the GPU is missing or unusable, skipped where
    the time limit leaves less than it needs."""
    if part.needs_gpu and not gpu.usable:
        return PartResult(f"failed: {gpu.problem}" if gpu.problem else NO_GPU, environment=environment)
    if context.seconds_left() < part.needs_seconds:
        left = max(0.0, context.seconds_left())
        return PartResult(f"skipped: time limit ({left:.0f} s left, needs {part.needs_seconds:.0f} s)",
                          environment=environment)  # fmt: skip
    context.work_dir.mkdir(parents=True, exist_ok=True)
    started = time.perf_counter()
    try:
        outcome = part.run(context)
    except PartSkipped as skipped:
        return PartResult(f"skipped: {skipped}", time.perf_counter() - started, environment=environment)
    except PartStopped as stopped:  # the time limit, not the GPU path: kept as what it measured, never a failure
        status, figures = f"stopped: {stopped.reason}", stopped.figures
    except PartFailed as failure:
        status, figures = f"failed: {failure.reason}", failure.figures
    except Exception as error:  # a part's crash is that part's failure; the next part still runs
        status = f"failed: {type(error).__name__}: {error}"
        figures = {"traceback": traceback.format_exc(limit=-8)}
    else:
        return PartResult("passed", time.perf_counter() - started, outcome.summary, outcome.figures, environment)
    return PartResult(status, time.perf_counter() - started, figures=figures, environment=environment)


def check(args: argparse.Namespace, parts: Mapping[str, Part], gpu: GpuState, work_dir: Path) -> dict[str, PartResult]:
    """Run the chosen parts, writing the report after each; return the results of those that ran."""
    path = report_path(args.report_dir, gpu.name)
    merged = load_report(path)
    names = chosen_parts(args.parts, parts)
    if args.rerun_failed:
        names = to_rerun(merged, names)
    print(f"gpu check: {gpu.name or gpu.problem or 'no usable GPU'}; torch {torch.__version__}; report {path}")
    print(f"parts to run: {', '.join(names) or 'none (every chosen part passed before)'}; scratch {work_dir}")
    environment = run_environment(gpu)
    device = torch.device("cuda" if gpu.usable else "cpu")
    deadline = None if args.time_limit is None else time.monotonic() + args.time_limit
    for name in names:
        print(f"[{name}] {parts[name].what} ...", flush=True)
        context = CheckContext(device, work_dir / name, work_dir / "data", args.report_dir, deadline=deadline)
        merged[name] = run_part(parts[name], context, gpu, environment)
        result = merged[name]
        print(f"[{name}] {result.status} ({result.seconds:.0f} s) {result.summary}".rstrip(), flush=True)
        order = [*parts, *(other for other in merged if other not in parts)]  # parts of an older registry last
        device_record = gpu.name or gpu.problem or "no usable GPU"
        write_report(path, device_record, {other: merged[other] for other in order if other in merged})
    print("\n" + summary_table(merged, parts, names))
    return {name: merged[name] for name in names}


def main(argv: Sequence[str] | None = None, parts: Mapping[str, Part] = PARTS, gpu: GpuState | None = None) -> int:
    args = build_parser(parts).parse_args(argv)
    work_dir = args.work_dir or Path(tempfile.mkdtemp(prefix="dml-gpu-check-"))
    try:
        gpu = gpu or probe_gpu()
        ran = check(args, parts, gpu, work_dir)
        failed = {name: result for name, result in ran.items() if result.failed}
        unfinished = [name for name, result in ran.items() if result.status.startswith(TIME_LIMITED)]
    except InputError as error:
        if not args.work_dir:
            shutil.rmtree(work_dir, ignore_errors=True)
        print(f"gpu check: error: {error}", file=sys.stderr)
        return 2
    for name, result in failed.items():
        print(f"FAILED {name}: {result.status.removeprefix('failed: ')}", file=sys.stderr)
    if unfinished:
        print(f"not finished within --time-limit: {', '.join(unfinished)}; the next call's --rerun-failed goes on")
    if failed or args.work_dir:
        print(f"scratch folder kept: {work_dir}")
    else:
        shutil.rmtree(work_dir, ignore_errors=True)
    return 1 if failed else 0
