"""The ``bench`` part: the training benchmark (``tests/benchmarks/bench_training.py``: every paper's main recipe at
paper scale, end to end, model-only and backbone bound), each paper on the pipeline ``data.pipeline: auto`` gives
it on CUDA (``DML_BENCH_PIPELINES=default``; ``nox -s bench`` measures both), its JSON kept beside the report
(``training-cuda.json``).

The part passes when every paper has its figures on its default pipeline: the benchmark's own targets
(docs/performance.md) are performance goals, not a broken GPU path, so the figures keep its verdict on them and the
summary says whether they were met. Stopped by the check's time limit, it keeps what the benchmark wrote so far.
"""

from __future__ import annotations

import importlib.util
import json
import time

from dml_core.gpu_check.children import PYTHON, run_child
from dml_core.gpu_check.part import CheckContext, Outcome, PartFailed, PartSkipped, PartStopped
from dml_core.output_paths import REPOSITORY_ROOT
from dml_core.vocabulary import PAPER_KEYS

BENCHMARK = REPOSITORY_ROOT / "tests" / "benchmarks" / "bench_training.py"
TIMEOUT_SECONDS = 360


def measured_problems(report: dict, papers: int) -> list[str]:
    """What a benchmark report lacks: a paper, or a paper's default pipeline, without its measurement.

    >>> pil = {"default_pipeline": "pil", "pipelines": {"pil": {}}}
    >>> measured_problems({"papers": {"a": pil, "b": {"default_pipeline": "cache", "pipelines": {}}}}, 3)
    ['1 paper(s) missing', 'b: cache not measured']
    """
    found = report.get("papers", {})
    problems = [f"{papers - len(found)} paper(s) missing"] if len(found) < papers else []
    return problems + [
        f"{paper}: {record['default_pipeline']} not measured"
        for paper, record in found.items()
        if record["default_pipeline"] not in record.get("pipelines", {})
    ]


def _written_since(path, started: float) -> bool:
    """Whether the benchmark wrote ``path`` in this call (an older report is another call's)."""
    return path.is_file() and path.stat().st_mtime >= started


def run_bench(context: CheckContext) -> Outcome:
    if not BENCHMARK.is_file():
        raise PartSkipped(f"{BENCHMARK.relative_to(REPOSITORY_ROOT)} is not in this checkout")
    if importlib.util.find_spec("pytest_benchmark") is None:
        raise PartSkipped("pytest-benchmark is not installed")
    command = [
        PYTHON, "-m", "pytest", str(BENCHMARK), "-q", "-s", "-o", "python_files=bench_*.py", "--benchmark-only",
        "--benchmark-columns=min,rounds", "-p", "no:cacheprovider",
    ]  # fmt: skip
    report_path = context.report_dir / f"training-{context.device.type}.json"
    started = time.time()
    failure = None
    try:
        run_child("the training benchmark", command, context.work_dir / "bench.log", TIMEOUT_SECONDS,
                  env={"DML_BENCH_OUT": str(context.report_dir), "DML_BENCH_PIPELINES": "default"},
                  deadline=context.deadline)  # fmt: skip
    except PartFailed as error:  # it fails on a missed target too: judged below from what it wrote
        failure = error
    except PartStopped as stopped:
        report = json.loads(report_path.read_text(encoding="utf-8")) if _written_since(report_path, started) else {}
        measured = [f"{paper} {pipeline}" for paper, record in report.get("papers", {}).items()
                    for pipeline in record.get("pipelines", {})]  # fmt: skip
        raise PartStopped(
            f"{len(measured)} of {len(PAPER_KEYS)} papers measured ({', '.join(measured) or 'none'}); {stopped.reason}",
            {"report": report_path.name if report else None, "papers": report.get("papers", {})},
        ) from None
    if not _written_since(report_path, started):
        raise PartFailed(failure.reason if failure else f"the benchmark wrote no {report_path.name}")
    report = json.loads(report_path.read_text(encoding="utf-8"))
    # Complete measurements with a failed pytest: the benchmark's closing assertion on its targets failed.
    log = (context.work_dir / "bench.log").read_text(encoding="utf-8", errors="replace")
    failed_lines = [line.strip() for line in log.splitlines() if line.startswith("FAILED")]
    verdict = f"targets missed: {'; '.join(failed_lines) or failure.reason}" if failure else "targets met"
    figures = {"report": report_path.name, "benchmark_verdict": verdict, "papers": report.get("papers", {})}
    problems = measured_problems(report, len(PAPER_KEYS))
    if problems:
        raise PartFailed("; ".join(problems), figures)
    ratios = [
        paper["pipelines"][paper["default_pipeline"]]["ratio_end_to_end_over_model_only"]
        for paper in figures["papers"].values()
    ]
    return Outcome(
        f"{len(PAPER_KEYS)} papers, default pipelines; end-to-end/model-only {min(ratios):.2f}-{max(ratios):.2f}; "
        + verdict.split(":")[0],
        figures,
    )
