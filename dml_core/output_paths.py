"""Where reproduction runs read recipes and write: run folders (checkpoints), results files and tables.

Defaults are relative to the working directory (``DML_RUNS_DIR``, ``DML_RESULTS_DIR``, ``DML_TABLES_DIR`` move them);
smoke, mini and rehearsal output go to sub-folders of their own, so that they never mix with full-scale numbers.

>>> results_file(Path("results"), "damlrrm", "ours-cub200", 1, Tier.SMOKE).as_posix()
'results/smoke/damlrrm/ours-cub200-seed1.json'
>>> tables_markdown(Path("tables"), "drml", Tier.MINI).as_posix()
'tables/mini/drml.md'
>>> tables_markdown(Path("tables"), "damlrrm", Tier.FULL).as_posix()
'tables/damlrrm.md'
>>> jobs_folder(Path("runs"), "anml", Tier.FULL).as_posix()
'runs/submitit/anml'
"""

from __future__ import annotations

import os
import re
from pathlib import Path

from dml_core.tier import Tier

# The folder holding dml_core: the repository in a checkout (git state, recipes and recorded paths refer to it).
REPOSITORY_ROOT = Path(__file__).resolve().parents[1]
# The repository's recipes: reproduce/<key>/*.yaml (and reproduce/tolerances.yaml).
RECIPES_DIR = REPOSITORY_ROOT / "reproduce"


def recorded_path(path: str | os.PathLike) -> str:
    """How a results file names a recipe or plan file: relative to the repository when it lies inside it (the
    same on every machine and checkout), else as given.

    >>> recorded_path(RECIPES_DIR / "anml" / "linear" / "table2-wine.yaml")
    'reproduce/anml/linear/table2-wine.yaml'
    >>> recorded_path("/elsewhere/my-recipe.yaml")
    '/elsewhere/my-recipe.yaml'
    """
    resolved = Path(path).resolve()
    if resolved.is_relative_to(REPOSITORY_ROOT):
        return resolved.relative_to(REPOSITORY_ROOT).as_posix()
    return str(path)


DATA_ROOT_VARIABLE = "DML_DATA_ROOT"


def data_root(override: str | os.PathLike | None = None, recipe_root: str | os.PathLike | None = None) -> Path:
    """Where prepared datasets live: ``--data-root``, else the recipe's ``data.root``, else ``$DML_DATA_ROOT``,
    else ./data; training, the linear runs, the preflight and the tables' index check all look there.

    >>> data_root("/d", "/r").as_posix(), data_root(None, "/r").as_posix()
    ('/d', '/r')
    """
    return Path(override or recipe_root or os.environ.get(DATA_ROOT_VARIABLE, "data"))


def runs_root() -> Path:
    return Path(os.environ.get("DML_RUNS_DIR", "runs"))


def results_root() -> Path:
    return Path(os.environ.get("DML_RESULTS_DIR", "results"))


def tables_root() -> Path:
    return Path(os.environ.get("DML_TABLES_DIR", "tables"))


def rehearsal_root(root: Path) -> Path:
    """``<root>/rehearsal``: the runs and results of rehearsals, apart from the reproductions' (the table builder
    never reads them, and the results gate refuses a rehearsal's file wherever it lies).

    >>> rehearsal_root(Path("results")).as_posix()
    'results/rehearsal'
    """
    return root / "rehearsal"


def _scoped(root: Path, tier: Tier) -> Path:
    return root / tier.subfolder if tier.subfolder else root


def results_folder(root: Path, key: str, tier: Tier) -> Path:
    """``<root>/[smoke/|mini/]<key>``: one paper's results files."""
    return _scoped(root, tier) / key


def results_file(root: Path, key: str, recipe_id: str, seed: int, tier: Tier) -> Path:
    """``<root>/[smoke/|mini/]<key>/<recipe id>-seed<seed>.json``."""
    return results_folder(root, key, tier) / f"{recipe_id}-seed{seed}.json"


def run_folder(root: Path, key: str, recipe_id: str, seed: int, tier: Tier) -> Path:
    """``<root>/[smoke/|mini/]<key>/<recipe id>-seed<seed>``: the checkpoint of one run."""
    return _scoped(root, tier) / key / f"{recipe_id}-seed{seed}"


def jobs_folder(root: Path, key: str, tier: Tier) -> Path:
    """``<root>/[smoke/|mini/]submitit/<key>``: the cluster jobs' pickles and logs (``dml reproduce --launcher``)."""
    return _scoped(root, tier) / "submitit" / key


def tables_markdown(root: Path, key: str, tier: Tier) -> Path:
    """``<root>/[smoke/|mini/]<key>.md``; its plots go in the folder of the same name without ``.md``."""
    return _scoped(root, tier) / f"{key}.md"


def device_slug(device_name: str | None) -> str:
    """The file-name form of a device name; "cpu" without a usable GPU.

    >>> device_slug("NVIDIA H100 80GB HBM3")
    'nvidia-h100-80gb-hbm3'
    >>> device_slug(None)
    'cpu'
    """
    if not device_name:
        return "cpu"
    return re.sub(r"[^a-z0-9]+", "-", device_name.lower()).strip("-") or "gpu"
