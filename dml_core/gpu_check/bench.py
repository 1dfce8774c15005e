"""The ``bench`` part: the training benchmark (``tests/benchmarks/bench_training.py``: every paper's main recipe at
paper scale, both data pipelines, end to end against the model-only bound), run as ``nox -s bench`` runs it, its
JSON kept beside the report (``training-cuda.json``).

The part passes when every paper x pipeline was measured. The benchmark's own targets (issue 9: the cache pipeline
at 0.9 of the bound, damlrrm's recipe 20 times faster than published) are performance goals, not a broken GPU
path: the figures keep the benchmark's own verdict on them (its failed assertion, where one failed), and the
summary says whether they were met.
"""

from __future__ import annotations

import importlib.util
import json
import time

from dml_core.gpu_check.children import PYTHON, run_child
from dml_core.gpu_check.part import CheckContext, Outcome, PartFailed, PartSkipped
from dml_core.output_paths import REPOSITORY_ROOT
from dml_core.vocabulary import PAPER_KEYS

BENCHMARK = REPOSITORY_ROOT / "tests" / "benchmarks" / "bench_training.py"
PIPELINES = ("pil", "cache")
TIMEOUT_SECONDS = 540


def measured_problems(report: dict, papers: int) -> list[str]:
    """What a benchmark report lacks: a paper, or a pipeline of one, without its measurement.

    >>> measured_problems({"papers": {"a": {"pipelines": {"pil": {}, "cache": {}}}, "b": {"pipelines": {}}}}, 2)
    ['b: pil not measured', 'b: cache not measured']
    """
    found = report.get("papers", {})
    problems = [f"{papers - len(found)} paper(s) missing"] if len(found) < papers else []
    return problems + [
        f"{paper}: {pipeline} not measured"
        for paper, record in found.items()
        for pipeline in PIPELINES
        if pipeline not in record.get("pipelines", {})
    ]


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
                  env={"DML_BENCH_OUT": str(context.report_dir)})  # fmt: skip
    except PartFailed as error:  # it fails on a missed target too: judged below from what it wrote
        failure = error
    if not report_path.is_file() or report_path.stat().st_mtime < started:
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
    ratios = [paper["pipelines"]["cache"]["ratio_end_to_end_over_model_only"] for paper in figures["papers"].values()]
    return Outcome(
        f"{len(PAPER_KEYS)} papers x 2 pipelines; cache end-to-end/bound {min(ratios):.2f}-{max(ratios):.2f}; "
        + verdict.split(":")[0],
        figures,
    )
