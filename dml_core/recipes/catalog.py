"""Every run of the suite: ``reproduce/<key>/*.yaml`` expanded, listed (``dml recipes list``), found by id.

A run is named by its id, unique within its paper (``ours-cub200``), or by ``<paper>/<id>`` where two papers
use the same id (``damlrrm/npair-cub200``). ``load_recipe`` also takes the path of a recipe file that declares
one run (a file of one's own, or a file under ``reproduce/``).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path

from dml_core.command_line import DML
from dml_core.errors import InputError
from dml_core.output_paths import RECIPES_DIR
from dml_core.recipes.assumptions import ASSUMPTIONS_FILE, PaperAssumptions, load_paper_assumptions
from dml_core.recipes.compose import RunDefinition, expand_file
from dml_core.recipes.resolve import resolve
from dml_core.recipes.settings import Recipe
from dml_core.vocabulary import PAPER_KEYS, RECIPE_KEYS


@dataclass(frozen=True)
class PaperRecipes:
    """One paper's runs (sorted by id) and its assumptions and readings."""

    key: str
    assumptions: PaperAssumptions | None  # None: a folder without assumptions.yaml (assumptions are sentences)
    runs: tuple[RunDefinition, ...]

    def run(self, run_id: str) -> RunDefinition:
        for run in self.runs:
            if run.id == run_id:
                return run
        raise InputError(f"run {run_id!r}: not a run of {self.key}; its runs: {', '.join(r.id for r in self.runs)}")


# Files of a paper folder that are not recipes: its assumptions and readings, the mini tier's comparison
# (``dml_core.recipes.mini``) and a study's run settings (``dml_core.recipes.study``).
NOT_RECIPE_FILES = (ASSUMPTIONS_FILE, "mini.yaml", "study.yaml")


def recipe_files(folder: Path) -> list[Path]:
    """The recipe files of a paper folder (every ``*.yaml`` but ``NOT_RECIPE_FILES``), sorted."""
    return sorted(path for path in Path(folder).glob("*.yaml") if path.name not in NOT_RECIPE_FILES)


def load_paper(key: str, recipes_dir: Path = RECIPES_DIR) -> PaperRecipes:
    """Expand every recipe file of ``<recipes_dir>/<key>/``; run ids must be unique within the paper."""
    folder = Path(recipes_dir) / key
    assumptions = load_paper_assumptions(folder)
    runs: dict[str, RunDefinition] = {}
    for path in recipe_files(folder):
        for run in expand_file(path, assumptions):
            if run.id in runs:
                raise InputError(f"{path}: run {run.id}: the id is also declared in {runs[run.id].file}")
            runs[run.id] = run
    return PaperRecipes(key, assumptions, tuple(runs[run_id] for run_id in sorted(runs)))


def load_catalog(recipes_dir: Path = RECIPES_DIR, papers: Iterable[str] = PAPER_KEYS) -> dict[str, PaperRecipes]:
    """Every paper's runs, for the papers that have a folder under ``recipes_dir``. The default is the papers
    alone; ``RECIPE_KEYS`` adds the studies' folders (``reproduce/fair/``), which have no published rows."""
    return {key: load_paper(key, recipes_dir) for key in papers if (Path(recipes_dir) / key).is_dir()}


def find_run(reference: str, recipes_dir: Path = RECIPES_DIR) -> RunDefinition:
    """The run named ``<paper>/<id>`` or ``<id>`` (an id two papers share needs its paper)."""
    if "/" in reference:
        key, run_id = reference.split("/", 1)
        if key not in RECIPE_KEYS:
            raise InputError(f"run {reference!r}: unknown paper {key!r}; recipe folders: {', '.join(RECIPE_KEYS)}")
        return load_paper(key, recipes_dir).run(run_id)
    folders = load_catalog(recipes_dir, RECIPE_KEYS).values()
    matches = [p.run(reference) for p in folders if reference in {r.id for r in p.runs}]
    if not matches:
        raise InputError(
            f"{reference}: neither a recipe file nor the id of a run (`{DML} recipes list` lists the runs)"
        )
    if len(matches) > 1:
        names = ", ".join(f"{run.paper}/{run.id}" for run in matches)
        raise InputError(f"run {reference!r}: several papers have a run of that id; name one: {names}")
    return matches[0]


def run_of_file(path: Path) -> RunDefinition:
    """The one run a recipe file declares (its folder's assumptions.yaml, if any, resolves assumption ids)."""
    path = Path(path)
    if not path.exists():
        raise InputError(f"{path}: recipe file not found")
    runs = expand_file(path, load_paper_assumptions(path.parent))
    if len(runs) != 1:
        if not runs:
            raise InputError(f"{path}: a base file (no id, no runs): run a file that extends it, or a run id")
        ids = ", ".join(run.id for run in runs)
        raise InputError(f"{path}: declares {len(runs)} runs ({ids}): pass one of their ids instead of the file")
    return runs[0]


def resolve_run(reference: str | Path, recipes_dir: Path = RECIPES_DIR) -> RunDefinition:
    """A run from a recipe file's path or a run id."""
    path = Path(reference)
    if path.suffix in {".yaml", ".yml"} or path.exists():
        return run_of_file(path)
    return find_run(str(reference), recipes_dir)


def load_recipe(
    reference: str | Path, overrides: Sequence[str] = (), readings: Mapping[str, str] | None = None
) -> Recipe:
    """The validated recipe of a run (file path or run id) under ``readings`` and ``--set`` ``overrides``."""
    run = resolve_run(reference)
    check_reading_choices([run], readings or {}, what=f"run {run.id}")
    return resolve(run, readings, overrides)


def parse_reading_choices(texts: Sequence[str]) -> dict[str, str]:
    """``["cgml.graphs=halves", ...]`` -> ``{"cgml.graphs": "halves"}``.

    >>> parse_reading_choices(["damlrrm.lr=1e-3"])
    {'damlrrm.lr': '1e-3'}
    """
    choices = {}
    for text in texts:
        name, separator, value = text.partition("=")
        if not separator or not name or not value:
            raise InputError(f"--reading: expected NAME=VALUE, found {text!r}")
        choices[name.strip()] = value.strip()
    return choices


def check_reading_choices(runs: Sequence[RunDefinition], choices: Mapping[str, str], what: str) -> None:
    """Every chosen reading is one some of ``runs`` rest on, and its value one of that reading's values."""
    for name, value in choices.items():
        using = [run for run in runs if name in run.reading_names]
        if not using:
            offered = sorted({n for run in runs for n in run.reading_names})
            raise InputError(
                f"--reading {name}: none of {what} rests on this reading; "
                f"their readings: {', '.join(offered) or 'none'}"
            )
        values = using[0].paper_assumptions.readings[name].values
        if value not in values:
            raise InputError(f"--reading {name}: expected one of {', '.join(values)}, found {value!r}")
