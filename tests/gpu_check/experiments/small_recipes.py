"""Paper-scale recipes shrunk for the CPU: the parts that build each paper's main recipe (graphs, precision) run them
at the smoke tier's size with a network an eighth as wide."""

from dml_core.gpu_check.experiments.overhead import bound_recipe
from dml_core.recipes import smoke_version


def narrow_smoke_recipe(run: str):
    """``run``'s recipe as the part builds it (``bound_recipe``), at the smoke size, its network 1/8 as wide."""
    recipe = smoke_version(bound_recipe(run))
    return recipe.model_copy(update={"model": recipe.model.model_copy(update={"width": 0.125})})
