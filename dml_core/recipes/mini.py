"""Which runs the mini tier trains for a paper: ``reproduce/<key>/mini.yaml``, its headline comparison.

The mini tier (``dml reproduce KEY --mini``) shows on the CPU that each recipe as pinned learns: the proposed
method and the baseline(s) the paper claims it beats, runs the authors trained themselves, each shrunk by its
recipe's ``mini:`` settings (``dml_core.recipes.tiers.mini_version``). The file names those runs and the claim,
so the mini page can say whether the claimed ordering holds at that scale (a small-scale check, not a reproduction):

    proposed: drml-pa-cub200
    baselines: [proxyanchor-cub200]
    claim: DRML improves each method it is combined with (Table 4) ...
    why: the ProxyAnchor family: the cheapest backbone of the three ...
    main: drml-pa-cub200

``main`` is no mini run: it is the paper's main run at full scale (its method on CUB-200-2011), the one the training
benchmark times and the GPU check's precision and graphs parts train (``main_runs``). It is declared here, in the
paper's folder, with the paper's other choice of runs.
"""

from __future__ import annotations

from collections.abc import Iterable
from pathlib import Path

from pydantic import Field, model_validator

from dml_core.errors import InputError
from dml_core.output_paths import RECIPES_DIR
from dml_core.recipes.catalog import PaperRecipes
from dml_core.recipes.compose import RunDefinition
from dml_core.schema import StrictModel, load_yaml_model
from dml_core.vocabulary import PAPER_KEYS

MINI_FILE = "mini.yaml"  # (catalog.NOT_RECIPE_FILES keeps it out of the recipe files)


class MiniComparison(StrictModel):
    """The proposed run, the baselines it is claimed to beat (run ids of the paper), the claim and why these."""

    proposed: str
    baselines: list[str] = Field(min_length=1)
    claim: str  # what the paper claims (section, table, the printed numbers) about these runs
    why: str  # why these runs stand for the paper's headline comparison
    main: str  # the paper's main run at full scale (not a mini run)

    @model_validator(mode="after")
    def _distinct(self) -> MiniComparison:
        if len(set(self.run_ids)) != len(self.run_ids):
            raise ValueError(f"expected distinct run ids, found {self.run_ids}")
        return self

    @property
    def run_ids(self) -> list[str]:
        return [self.proposed, *self.baselines]


def mini_file(recipes_dir: Path, key: str) -> Path:
    return Path(recipes_dir) / key / MINI_FILE


def load_mini_comparison(recipes_dir: Path, key: str) -> MiniComparison:
    """``<recipes_dir>/<key>/mini.yaml``, or an ``InputError`` naming the file."""
    path = mini_file(recipes_dir, key)
    if not path.is_file():
        raise InputError(f"{path}: not found; the mini tier of {key} needs its headline comparison there")
    return load_yaml_model(path, MiniComparison, what="mini comparison")


def main_runs(recipes_dir: Path = RECIPES_DIR, papers: Iterable[str] = PAPER_KEYS) -> dict[str, str]:
    """Each paper's main run id (``main`` of its mini.yaml), by paper key in the papers' order.

    >>> main_runs()["damlrrm"]
    'ours-cub200'
    """
    return {key: load_mini_comparison(recipes_dir, key).main for key in papers}


def main_run_references(recipes_dir: Path = RECIPES_DIR) -> tuple[str, ...]:
    """``<paper>/<id>`` of each paper's main run (``main_runs``), as ``load_recipe`` takes them."""
    return tuple(f"{key}/{run_id}" for key, run_id in main_runs(recipes_dir).items())


def mini_runs(paper: PaperRecipes, comparison: MiniComparison, origin: str | Path) -> list[RunDefinition]:
    """The runs of the comparison, proposed first; an unknown id is an ``InputError`` naming ``origin``."""
    known = {run.id: run for run in paper.runs}
    unknown = [run_id for run_id in comparison.run_ids if run_id not in known]
    if unknown:
        raise InputError(f"{origin}: expected run ids of {paper.key}, found {', '.join(unknown)}")
    return [known[run_id] for run_id in comparison.run_ids]
