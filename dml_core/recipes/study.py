"""A study's design and run settings: ``reproduce/<key>/study.yaml`` for a recipe folder that is not a paper's
(``fair``).

A study runs and is tabled like a paper (``dml reproduce fair``) but reproduces no published table: it compares the
papers' methods under one protocol of its own, over several seeds. Its file fixes, before any run, what the study
tests and how: the seeds (the full tier's default, at least ``MIN_SEEDS``), the one data set whose runs stand for
the whole protocol at the mini tier (where every data set becomes the embedded_mini glyphs), the methods it runs
(the papers', the classic baselines and the controls: declared here, not derived from the suite's paper keys), the
hypotheses (the family Holm's correction runs over), the rule that picks the reference they are tested against, the
family-wise level, the margin of practical equivalence, the power a minimum detectable difference is stated at, and
the validation search's budget (``search_problems`` checks that every searched run keeps to it):

    seeds: [0, 1, 2, 3, 4]
    mini_dataset: cub200
    methods: {papers: [damlrrm, ...], baselines: [contrastive, ...], controls: {NAME: {method, baseline}}, why: ...}
    hypotheses: {methods: [damlrrm, ...], datasets: [cub200, cars196], metrics: [R@1, MAP@R], why: ...}
    reference: {rule: best-baseline-on-validation, why: ...}
    level: 0.05
    equivalence_margin: {R@1: 1.0, MAP@R: 1.0}
    power: 0.8
    search: {factors: [0.5, 2.0], parameters: [loss, learning-rate], why: ...}
    why: ...
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from pathlib import Path
from typing import Literal

from pydantic import Field, NonNegativeInt, PositiveFloat, field_validator, model_validator

from dml_core.errors import InputError
from dml_core.recipes.catalog import PaperRecipes
from dml_core.recipes.compose import RunDefinition
from dml_core.schema import StrictModel, load_yaml_model
from dml_core.tier import Tier
from dml_core.vocabulary import STUDY_KEYS, FairDataset, ImageDataset, PaperKey

STUDY_FILE = "study.yaml"  # (catalog.NOT_RECIPE_FILES keeps it out of the recipe files)
MIN_SEEDS = 5  # at full scale: fewer leave a t-interval too wide for any verdict (docs/fair.md)
SEARCH_READING = "fair.search-point"  # the study's reading: each method's validation search point
PAPER_POINT = "paper"  # the search point at the paper's own values (the table's runs)
Metric = Literal["R@1", "MAP@R"]
SearchedParameter = Literal["loss", "learning-rate"]
# how a search point's name spells its parameter: loss-x0.5, lr-x2
POINT_PREFIX: dict[str, str] = {"loss": "loss", "learning-rate": "lr"}


def _distinct(values: list, what: str) -> list:
    if len(set(values)) != len(values):
        raise ValueError(f"expected distinct {what}, found {values}")
    return values


class Control(StrictModel):
    """A control: the paper ``method``'s base loss, the classic ``baseline``'s, on the method's own batches."""

    method: str
    baseline: str


class StudyMethods(StrictModel):
    """Every method the study runs, in its page's order: the papers' methods, the classic baselines (the reference
    is picked among them) and the controls, by name (a run is ``<method>-<dataset>``)."""

    papers: list[PaperKey] = Field(min_length=1)
    baselines: list[str] = Field(min_length=1)
    controls: dict[str, Control] = Field(default_factory=dict)
    why: str

    @model_validator(mode="after")
    def _each_once_and_controls_of_their_own(self) -> StudyMethods:
        _distinct(self.names, "method names")
        for name, control in self.controls.items():
            if control.method not in self.papers or control.baseline not in self.baselines:
                raise ValueError(
                    f"controls.{name}: expected a method of papers and a baseline of baselines, found "
                    f"{control.method!r} and {control.baseline!r}"
                )
        return self

    @property
    def names(self) -> list[str]:
        return [*self.papers, *self.baselines, *self.controls]

    def kind(self, method: str) -> str:
        """``paper``, ``baseline`` or ``control``.

        >>> StudyMethods(papers=["cgml"], baselines=["npair"], why="").kind("npair")
        'baseline'
        """
        if method in self.papers:
            return "paper"
        return "baseline" if method in self.baselines else "control"


class Hypotheses(StrictModel):
    """The family: each of ``methods`` against the reference, per data set and metric (test numbers)."""

    methods: list[PaperKey] = Field(min_length=1)
    datasets: list[FairDataset] = Field(min_length=1)
    metrics: list[Metric] = Field(min_length=1)
    why: str

    @field_validator("methods", "datasets", "metrics")
    @classmethod
    def _no_repeats(cls, values: list) -> list:
        return _distinct(values, "entries")


class ReferenceRule(StrictModel):
    """How the reference every hypothesis is tested against is picked (on validation, never on test)."""

    rule: Literal["best-baseline-on-validation"]
    why: str


class SearchBudget(StrictModel):
    """The validation search every searched method gets alike: each of ``parameters`` (its main loss
    hyper-parameter, the learning rate) at its value times each of ``factors``, one at a time."""

    factors: list[PositiveFloat] = Field(min_length=1)
    parameters: list[SearchedParameter] = Field(min_length=1)
    why: str

    @field_validator("factors")
    @classmethod
    def _moves(cls, factors: list[float]) -> list[float]:
        if 1.0 in factors:
            raise ValueError("factors: 1 is the paper's own point, expected only factors that move the value")
        return _distinct(factors, "factors")

    @property
    def points(self) -> dict[str, tuple[str, float]]:
        """Each search point beside the paper's: name -> (parameter, factor).

        >>> SearchBudget(factors=[0.5, 2.0], parameters=["loss", "learning-rate"], why="").points["lr-x2"]
        ('learning-rate', 2.0)
        """
        return {
            f"{POINT_PREFIX[parameter]}-x{factor:g}": (parameter, factor)
            for parameter in self.parameters
            for factor in self.factors
        }


class Study(StrictModel):
    """The full tier's seeds, the mini tier's data set, the design declared before the runs, and why."""

    seeds: list[NonNegativeInt] = Field(min_length=MIN_SEEDS)
    mini_dataset: ImageDataset
    methods: StudyMethods
    hypotheses: Hypotheses
    reference: ReferenceRule
    level: float = Field(gt=0, lt=1)  # family-wise: the chance of any false firm verdict in the family
    equivalence_margin: dict[Metric, PositiveFloat]  # points: a difference inside +-margin is of no practical weight
    power: float = Field(gt=0, lt=1)  # at which a verdict row states its minimum detectable difference
    search: SearchBudget
    why: str

    @field_validator("seeds")
    @classmethod
    def _distinct_seeds(cls, seeds: list[int]) -> list[int]:
        return _distinct(seeds, "seeds")

    @model_validator(mode="after")
    def _hypotheses_of_its_paper_methods(self) -> Study:
        outside = [method for method in self.hypotheses.methods if method not in self.methods.papers]
        if outside:
            raise ValueError(f"hypotheses.methods: expected methods of methods.papers, found {outside}")
        return self

    @model_validator(mode="after")
    def _a_margin_per_metric(self) -> Study:
        missing = [metric for metric in self.hypotheses.metrics if metric not in self.equivalence_margin]
        if missing:
            raise ValueError(
                f"equivalence_margin: expected a margin for every metric of the hypotheses, missing {missing}"
            )
        return self

    def family(self, tier: Tier) -> list[tuple[str, str, str]]:
        """The hypotheses a page of ``tier`` tests, (method, data set, metric): at the mini tier those on its one
        data set, which stands for them all."""
        datasets = [self.mini_dataset] if tier == Tier.MINI else self.hypotheses.datasets
        return [
            (method, dataset, metric)
            for dataset in datasets
            for method in self.hypotheses.methods
            for metric in self.hypotheses.metrics
        ]


def is_study(key: str) -> bool:
    """Whether ``key`` names a study's recipe folder rather than a paper's.

    >>> is_study("fair"), is_study("cgml")
    (True, False)
    """
    return key in STUDY_KEYS


def load_study(recipes_dir: Path, key: str) -> Study:
    """``<recipes_dir>/<key>/study.yaml``, or an ``InputError`` naming the file."""
    path = Path(recipes_dir) / key / STUDY_FILE
    if not path.is_file():
        raise InputError(f"{path}: not found; the study {key} needs its seeds and mini data set there")
    return load_yaml_model(path, Study, what="study settings")


def study_mini_runs(recipes: PaperRecipes, study: Study) -> list[RunDefinition]:
    """The study's runs on ``study.mini_dataset`` (their default readings' data set), in id order."""
    runs = [run for run in recipes.runs if run.recipe().data.dataset == study.mini_dataset]
    if not runs:
        raise InputError(
            f"{recipes.key}/{STUDY_FILE}: field mini_dataset: expected the data set of some run of {recipes.key}, "
            f"found {study.mini_dataset!r}"
        )
    return runs


def study_plan(
    recipes: PaperRecipes,
    study: Study,
    tier: Tier,
    runs: Sequence[RunDefinition],
    seeds: Sequence[int] | None,
    mini_seeds: Sequence[int],
) -> tuple[list[RunDefinition], Sequence[int] | None]:
    """Which of ``runs`` (the study's runs, already restricted by ``--only``) train, over which seeds (``seeds``:
    given on the command line, or None). Full tier: all of them over the study's seeds; mini tier: those on its
    mini data set over ``mini_seeds``; smoke tier: as a paper's (each run's own seed). Given seeds always win.

    A study's seeds at full scale are its protocol (several seeds, each method the same ones); a paper's recipes
    run their own seed unless asked."""
    if tier == Tier.MINI:
        chosen = {run.id for run in study_mini_runs(recipes, study)}
        return [run for run in runs if run.id in chosen], mini_seeds if seeds is None else seeds
    if tier == Tier.FULL and seeds is None:
        return list(runs), study.seeds
    return list(runs), seeds


def _changes(searched: dict, paper: dict, prefix: str = "") -> dict[str, tuple]:
    """Every leaf setting where ``searched`` differs from ``paper`` (dotted path -> (paper's, searched's))."""
    found = {}
    for key in sorted(set(searched) | set(paper)):
        a, b = paper.get(key), searched.get(key)
        if isinstance(a, dict) and isinstance(b, dict):
            found.update(_changes(b, a, f"{prefix}{key}."))
        elif a != b:
            found[f"{prefix}{key}"] = (a, b)
    return found


def search_problems(recipes: PaperRecipes, study: Study) -> list[str]:
    """Where a run departs from the study's search budget: every method and baseline (every run but the controls)
    declares the reading ``SEARCH_READING`` with the paper's point and exactly the budget's points; a point of the
    loss moves one loss parameter, the same one at every factor, to the paper's value times its factor, and
    nothing else; a point of the learning rate moves ``optimizer.lr`` alone, likewise. None: an equal search."""
    problems = []
    expected = {PAPER_POINT, *study.search.points}
    for run in recipes.runs:
        control = any(run.id.startswith(f"{control}-") for control in study.methods.controls)
        if SEARCH_READING not in run.reading_names:
            problems += [] if control else [f"{run.id}: not searched ({SEARCH_READING} not declared)"]
            continue
        if control:
            problems.append(f"{run.id}: a control is not searched, found {SEARCH_READING}")
            continue
        values = set(run.paper_assumptions.readings[SEARCH_READING].values)
        if values != expected:
            problems.append(f"{run.id}: points {sorted(values)}, expected {sorted(expected)}")
            continue
        paper = run.recipe({SEARCH_READING: PAPER_POINT}).computation()
        paper.get("readings", {}).pop(SEARCH_READING, None)
        moved_loss = set()
        for point, (parameter, factor) in study.search.points.items():
            searched = run.recipe({SEARCH_READING: point}).computation()
            searched.get("readings", {}).pop(SEARCH_READING, None)
            changes = _changes(searched, paper)
            allowed = "optimizer.lr" if parameter == "learning-rate" else "loss.params.*"
            if len(changes) != 1 or not next(iter(changes)).startswith(allowed.rstrip("*")):
                problems.append(f"{run.id}: point {point} changes {sorted(changes)}, expected one {allowed} setting")
                continue
            ((path, (before, after)),) = changes.items()
            if not isinstance(before, int | float) or not math.isclose(after, before * factor, rel_tol=1e-9):
                problems.append(f"{run.id}: point {point} sets {path} {before} -> {after}, expected x{factor:g}")
            if parameter == "loss":
                moved_loss.add(path)
        if len(moved_loss) > 1:
            problems.append(f"{run.id}: its loss points move {sorted(moved_loss)}, expected one parameter")
    return problems
