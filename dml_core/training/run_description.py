"""What the trainer takes: a planned run (the recipe that trains and where it writes) and where and how it trains.

The planner (``runner.plan``) makes the planned runs of ``dml train`` and ``dml reproduce`` alike, and the one
training entry of both (``runner.run_path``) hands each to ``trainer.train`` as a ``RunToTrain``.
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import cached_property
from pathlib import Path

from dml_core.data.registry import DatasetSpec, get_spec
from dml_core.recipes.compose import RunDefinition
from dml_core.recipes.settings import Recipe
from dml_core.tier import Tier

RESULTS_NAME = "results.json"


@dataclass(frozen=True)
class PlannedRun:
    """One run x seed as planned: the recipe that trains (readings chosen, overrides applied, shrunk to its tier),
    the overrides its results file records, where it writes, and the declared run it was resolved from (None: a
    recipe made in code, whose results file names no recipe file)."""

    recipe: Recipe
    run_dir: Path
    results_path: Path | None = None  # None: <run_dir>/results.json
    tier: Tier = Tier.FULL
    overrides: tuple[str, ...] = ()
    run: RunDefinition | None = None

    def __post_init__(self) -> None:
        run_dir = Path(self.run_dir)
        object.__setattr__(self, "run_dir", run_dir)
        object.__setattr__(self, "results_path", Path(self.results_path or run_dir / RESULTS_NAME))
        object.__setattr__(self, "tier", Tier(self.tier))
        object.__setattr__(self, "overrides", tuple(self.overrides))

    @property
    def recipe_path(self) -> Path | None:
        """The recipe file that declares the run."""
        return self.run.file if self.run is not None else None

    @property
    def name(self) -> str:
        """``<run name> seed <seed>``: how logs and reports name the run (the run name carries any non-default
        readings after a ``~``)."""
        return f"{self.recipe.run_name} seed {self.recipe.training.seed}"

    @cached_property
    def dataset(self) -> DatasetSpec:
        """The spec of the recipe's ``data.dataset``, looked up once for the preflight's checks."""
        return get_spec(self.recipe.data.dataset)


def trains_again(rerun: bool, max_steps: int | None) -> bool:
    """Whether a finished run trains again: asked to (``rerun``), and every rehearsal (its results say nothing
    worth keeping).

    >>> trains_again(False, None), trains_again(True, None), trains_again(False, 1)
    (False, True, True)
    """
    return rerun or max_steps is not None


@dataclass(frozen=True)
class RunToTrain:
    """One planned run and where and how it trains: what ``trainer.train`` takes."""

    plan: PlannedRun
    device: str | None = None  # None: the GPU where torch has one, else the CPU (``device_choice.chosen_device``)
    data_root: Path | None = None  # None: the recipe's data.root, else $DML_DATA_ROOT, else ./data
    resume: bool = False  # continue the checkpoint in the run folder
    rerun: bool = False  # train a finished run again; its results file is replaced once the new one is complete
    max_steps: int | None = None  # a rehearsal: the recipe as it is, trained for its first max_steps iterations
    progress: bool = True

    @property
    def trains_again(self) -> bool:
        return trains_again(self.rerun, self.max_steps)
