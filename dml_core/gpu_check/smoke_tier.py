"""Run as a child process by the ``smoke`` part: one paper's smoke tier on one data pipeline through the suite's
own runner (``runner.inline.reproduce``, what ``dml reproduce KEY --smoke --pipeline P`` runs: every run in this
one process, then the linear plans and the tables), with DataLoader workers on.

The smoke versions of the recipes load their images in the main process (``data.num_workers: 0``), so a tier run
as it is would never start a worker; full-scale runs do. ``WithLoaderWorkers`` gives every planned run workers
(``data.num_workers`` is not part of a recipe's content hash), so a process that trains several runs on the GPU
starts workers after CUDA is initialised, the case where workers can die.

``python -m dml_core.gpu_check.smoke_tier KEY --pipeline P --out DIR --data-root DIR --device cuda [--only ID ...]``
writes ``DIR/summary.json`` (runs trained, failed, the device each results file records); exit 1 when a run failed.
"""

from __future__ import annotations

import argparse
import sys
from collections import Counter
from dataclasses import dataclass, replace
from pathlib import Path

from dml_core.atomic_io import atomic_write_json
from dml_core.output_paths import RECIPES_DIR, results_folder
from dml_core.recipes.settings import Recipe
from dml_core.results import ResultsFile, load_results
from dml_core.runner.inline import PaperRun, reproduce
from dml_core.tier import Tier
from dml_core.vocabulary import PAPER_KEYS


def with_loader_workers(recipe: Recipe, workers: int) -> Recipe:
    return recipe.model_copy(update={"data": recipe.data.model_copy(update={"num_workers": workers})})


@dataclass(frozen=True)
class WithLoaderWorkers(PaperRun):
    """A paper's reproduction whose every planned run loads its batches in ``loader_workers`` worker processes."""

    loader_workers: int = 2

    def preflight(self, log=print, **options):
        checked = super().preflight(log, **options)
        plans = [replace(plan, recipe=with_loader_workers(plan.recipe, self.loader_workers)) for plan in checked.plans]
        return checked._replace(plans=plans)


def result_devices(results_root: Path, key: str) -> Counter:
    """How many of the paper's smoke results files record each training device."""
    folder = results_folder(results_root, key, Tier.SMOKE)
    loaded = [load_results(path) for path in sorted(folder.glob("*.json"))]
    return Counter(str(results.environment.get("device")) for results in loaded if isinstance(results, ResultsFile))


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m dml_core.gpu_check.smoke_tier")
    parser.add_argument("paper", choices=PAPER_KEYS)
    parser.add_argument("--pipeline", choices=("pil", "cache"), required=True)
    parser.add_argument("--out", type=Path, required=True)
    parser.add_argument("--data-root", type=Path, required=True)
    parser.add_argument("--device", required=True)
    parser.add_argument("--loader-workers", type=int, default=2)
    parser.add_argument("--only", nargs="+", default=[])
    args = parser.parse_args(argv)
    paper = WithLoaderWorkers(
        args.paper, recipes_dir=RECIPES_DIR, runs_root=args.out / "runs", results_root=args.out / "results",
        tables_root=args.out / "tables", tier=Tier.SMOKE, only=args.only, data_root=args.data_root, device=args.device,
        progress=False, pipeline=args.pipeline, loader_workers=args.loader_workers,
    )  # fmt: skip
    report = reproduce(paper)
    devices = result_devices(paper.results_root, args.paper)
    atomic_write_json(
        args.out / "summary.json",
        {"deep_runs": sum(devices.values()), "devices": dict(devices), "trained": len(report.trained),
         "failed": report.failed},
    )  # fmt: skip
    return 1 if report.failed else 0


if __name__ == "__main__":
    sys.exit(main())
