"""Recipes: the typed settings of a run (``dml_core.recipes.settings``), their content hash (``hashing``), how a
tier shrinks them (``tiers``), how recipe files compose them (``compose``, ``settings_tree``), the one way a run
becomes the recipe that trains (``resolve``), the papers' assumptions and readings (``assumptions``), every run of
the suite (``catalog``), the mini tier's headline comparison of each paper (``mini``) and a study's design
(``study``).

The import contracts (pyproject.toml) place it below ``data`` and above ``losses`` and ``evaluation``, and keep it
free of torch, torchvision and timm; of the package it imports only top-level helpers (``errors``, ``schema``,
``tier``, ``vocabulary``, ``output_paths``). ``data``, ``pipeline``, ``training`` and the parts above them import
it; a recipe's components are checked against their registries above both, in ``runner.component_check``."""

from dml_core.recipes.catalog import (
    PaperRecipes,
    check_reading_choices,
    find_run,
    load_catalog,
    load_paper,
    load_recipe,
    parse_reading_choices,
    resolve_run,
)
from dml_core.recipes.compose import RunDefinition
from dml_core.recipes.settings import Recipe
from dml_core.recipes.tiers import mini_version, smoke_version

__all__ = [
    "PaperRecipes",
    "Recipe",
    "RunDefinition",
    "check_reading_choices",
    "find_run",
    "load_catalog",
    "load_paper",
    "load_recipe",
    "mini_version",
    "parse_reading_choices",
    "resolve_run",
    "smoke_version",
]
