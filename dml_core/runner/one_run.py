"""The runner behind ``dml train RUN``: one run, planned by the planner (``plan.plan_run``), checked before it
trains and trained on the path of every run (``run_path.RunPath``), as the runs of ``dml reproduce`` are."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import ClassVar

from dml_core.output_paths import rehearsal_root, runs_root
from dml_core.recipes import check_reading_choices, parse_reading_choices, resolve_run
from dml_core.recipes.settings import Recipe
from dml_core.runner.plan import is_finished, plan_run
from dml_core.runner.run_path import RunPath
from dml_core.tier import Tier
from dml_core.training.device_choice import describe_device
from dml_core.training.distributed import Process
from dml_core.training.run_description import PlannedRun


@dataclass(frozen=True)
class OneRun(RunPath):
    """What ``dml train`` trains: one run (a run id or a recipe file) under ``--reading NAME=VALUE`` choices and
    ``--set`` overrides at a tier, where it writes (``out``, by default ``<runs root>/[rehearsal/]<run folder
    name>``; ``results``, by default ``<out>/results.json``) and how it trains."""

    reference: str | Path
    readings: Sequence[str] = ()
    overrides: Sequence[str] = ()
    tier: Tier = Tier.FULL
    out: Path | None = None
    results: Path | None = None
    resume: bool = False
    rerun: bool = False
    data_root: Path | None = None
    device: str | None = None
    max_steps: int | None = None
    progress: bool = True
    skip_missing: ClassVar[bool] = False  # one run: its missing inputs refuse it
    output_names: ClassVar[tuple[str, str]] = ("--out", "--results")

    def __post_init__(self) -> None:
        object.__setattr__(self, "tier", Tier(self.tier))
        object.__setattr__(self, "overrides", tuple(self.overrides))
        self.check_rehearsal()

    def planned(self) -> PlannedRun:
        """The run as it trains (``plan.plan_run``), where it writes."""
        run = resolve_run(self.reference)
        choices = parse_reading_choices(self.readings)
        check_reading_choices([run], choices, what=f"run {run.id}")
        return plan_run(run, choices, self.overrides, self.tier, self._place)

    def folder_name(self, recipe: Recipe) -> str:
        """``<run name>-seed<seed>[-smoke|-mini]``: the default run folder's name, and how the run's line names it."""
        return f"{recipe.run_name}-seed{recipe.training.seed}{'' if self.tier == Tier.FULL else f'-{self.tier}'}"

    def _place(self, recipe: Recipe) -> tuple[Path, Path | None]:
        root = rehearsal_root(runs_root()) if self.max_steps is not None else runs_root()
        return self.out or root / self.folder_name(recipe), self.results


def _say(line: str) -> None:
    print(line, flush=True)  # before the progress bar on stderr


def train_one(one: OneRun, log: Callable[[str], None] = _say) -> Path:
    """Plan ``one``'s run, check it before anything trains (the device, its component parameters, the inputs it
    reads, the places it writes, the finished-run rule), then train it, or skip it when it is finished (a results
    file of the same recipe; ``--rerun`` trains it again); return its results file."""
    plan = one.planned()
    device = one.training_device()
    one.check_recipes([plan])
    one.check_before_training([plan], [], log)
    if not one.trains_again and is_finished(plan):
        log(
            f"{plan.results_path}: finished earlier with this recipe (hash {plan.recipe.content_hash()[:12]}), "
            "skipped; --rerun trains it again"
        )
        return plan.results_path
    one.prepare_caches([plan], log)
    if Process.from_environment().is_main:
        log(f"{one.folder_name(plan.recipe)}: {one.training_line(plan, describe_device(device))}")
    return one.train(plan)
