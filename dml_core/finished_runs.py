"""The finished-run rule every tier follows: a results file of a deep run says the run is finished. Trained
again for the same recipe, the run is skipped; for another recipe (an edited field, ``--set``), it is refused, so
one recipe's numbers are never silently replaced by another's; ``--rerun`` trains it again either way.

The smoke and mini tiers keep no checkpoint once finished (``keeps_finished_checkpoint``), so the results file,
not the checkpoint, is what every tier asks."""

from __future__ import annotations

from pathlib import Path
from typing import Protocol

from dml_core.errors import InputError
from dml_core.results import ResultsFile, load_results


class OtherRecipesResults(InputError):
    """The results file holds a finished run of another recipe: training would replace its numbers."""


class HashedRecipe(Protocol):
    def content_hash(self) -> str: ...

    def hashes_of_this_computation(self) -> tuple[str, ...]: ...


def recorded_recipe_hash(results_path: str | Path) -> str | None:
    """The recipe hash a deep results file records; None where there is no results file (or a linear one)."""
    path = Path(results_path)
    if not path.is_file():
        return None
    results = load_results(path)
    return results.recipe.sha256 if isinstance(results, ResultsFile) else None


def is_finished_run(results_path: str | Path, recipe: HashedRecipe) -> bool:
    """A deep results file for exactly this recipe (same content hash: same seed and tier settings; or the hash an
    earlier version gave the same computation) exists."""
    recorded = recorded_recipe_hash(results_path)
    return recorded is not None and recorded in recipe.hashes_of_this_computation()


def check_finished_run(results_path: str | Path, recipe: HashedRecipe) -> bool:
    """True when ``results_path`` holds this recipe's finished run (skip it), False when it holds none (train);
    raises ``OtherRecipesResults`` when it holds another recipe's run (a damaged file: ``InputError``)."""
    recorded = recorded_recipe_hash(results_path)
    if recorded is None:
        return False
    if recorded in recipe.hashes_of_this_computation():
        return True
    raise OtherRecipesResults(
        f"{results_path}: a finished run of recipe hash {recorded[:12]} is there, but this recipe's hash is "
        f"{recipe.content_hash()[:12]}; pass --rerun to replace its results or choose another --out or --results"
    )
