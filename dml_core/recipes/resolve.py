"""The one way a declared run becomes the recipe that trains: its readings chosen, ``--set`` overrides applied,
shrunk to its tier. ``dml train``, ``dml recipes show``, the planner behind ``dml reproduce``,
``catalog.load_recipe`` and the results gate (``tables.gate.admission``) all call ``resolve``, so the same run,
readings, overrides and tier give the same recipe (and content hash) everywhere."""

from __future__ import annotations

from collections.abc import Mapping, Sequence

from dml_core.recipes.compose import RunDefinition, split_tier_overrides, with_overrides
from dml_core.recipes.settings import Recipe
from dml_core.recipes.tiers import TIER_VERSIONS
from dml_core.tier import Tier


def resolve(
    run: RunDefinition,
    readings: Mapping[str, str] | None = None,
    overrides: Sequence[str] = (),
    tier: Tier = Tier.FULL,
) -> Recipe:
    """``run`` under ``readings`` (reading -> value; the others at their defaults) and ``overrides`` (``--set``
    style), shrunk to ``tier``'s version. A ``smoke.*`` or ``mini.*`` override applies before the shrink, which
    follows it; any other applies after it, so the shrink keeps it (``--mini --set training.iterations=5`` trains
    5 iterations). The readings are not checked here: a caller checks them once against all its runs
    (``catalog.check_reading_choices``)."""
    shaping, kept = split_tier_overrides(overrides)
    shrunk = TIER_VERSIONS[tier](run.recipe(readings, shaping))
    return with_overrides(shrunk, kept)
