"""A study's run settings: ``reproduce/<key>/study.yaml`` for a recipe folder that is not a paper's (``fair``).

A study runs and is tabled like a paper (``dml reproduce fair``) but reproduces no published table: it compares the
papers' methods under one protocol of its own, over several seeds. Its file names those seeds (the full tier's
default) and the one data set whose runs stand for the whole protocol at the mini tier, where every data set becomes
the embedded_mini glyphs:

    seeds: [0, 1, 2, 3, 4]
    mini_dataset: cub200
    why: ...
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

from pydantic import Field, NonNegativeInt, field_validator

from dml_core.errors import InputError
from dml_core.recipes.catalog import PaperRecipes
from dml_core.recipes.compose import RunDefinition
from dml_core.schema import StrictModel, load_yaml_model
from dml_core.tier import Tier
from dml_core.vocabulary import STUDY_KEYS, ImageDataset

STUDY_FILE = "study.yaml"  # (catalog.NOT_RECIPE_FILES keeps it out of the recipe files)


class Study(StrictModel):
    """The full tier's seeds, the mini tier's data set, and why."""

    seeds: list[NonNegativeInt] = Field(min_length=1)
    mini_dataset: ImageDataset
    why: str

    @field_validator("seeds")
    @classmethod
    def _distinct(cls, seeds: list[int]) -> list[int]:
        if len(set(seeds)) != len(seeds):
            raise ValueError(f"expected distinct seeds, found {seeds}")
        return seeds


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
