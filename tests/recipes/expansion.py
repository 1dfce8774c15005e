"""The expansion of every recipe file under reproduce/, as committed in ``expanded_runs.json``.

``python -m tests.recipes.expansion --write`` rewrites the committed list after a deliberate change to the runs;
say in the commit which runs changed and why (the test shows the differences before you do).
Each run is listed with its targets and its recipe under the default readings, prose left out (descriptions and
assumption texts may be reworded freely; settings, ids and targets may not change unnoticed).
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

from dml_core.recipes import load_catalog
from dml_core.vocabulary import RECIPE_KEYS

COMMITTED = Path(__file__).with_name("expanded_runs.json")
PROSE = ("description", "assumptions")


def expansion() -> dict[str, dict]:
    """``paper/id -> {"targets": [...], "recipe": {...}}`` for every run of every recipe folder (the papers' and
    the fair study's), in id order."""
    runs = {}
    for key, paper in load_catalog(papers=RECIPE_KEYS).items():
        for run in paper.runs:
            recipe = run.recipe().model_dump(mode="json", exclude=set(PROSE))
            targets = sorted(f"{t['table']}/{t['row']}" for t in recipe.pop("targets"))
            runs[f"{key}/{run.id}"] = {"targets": targets, "recipe": recipe}
    return runs


def main(argv: list[str]) -> int:
    if argv != ["--write"]:
        print(__doc__)
        return 2
    COMMITTED.write_text(json.dumps(expansion(), indent=1, sort_keys=True) + "\n")
    print(f"wrote {COMMITTED}")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
