"""The recipe files expand to exactly the committed list of runs (ids, targets, settings), and stay compact."""

import json
from pathlib import Path

from dml_core.output_paths import RECIPES_DIR
from tests.recipes.expansion import COMMITTED, expansion

# The recipe layer before composition held 8,851 lines of YAML; composition keeps it under 40% of that.
YAML_LINES_BEFORE_COMPOSITION = 8851


def test_the_expansion_is_the_committed_list_of_runs():
    expected = json.loads(COMMITTED.read_text())
    actual = expansion()
    assert sorted(actual) == sorted(expected), "runs added or removed: regenerate the list if deliberate"
    changed = [name for name in expected if actual[name] != expected[name]]
    assert not changed, (
        f"{len(changed)} runs changed, e.g. {changed[:5]}; if deliberate: python -m tests.recipes.expansion --write"
    )


def test_the_recipe_files_stay_compact():
    lines = sum(len(path.read_text().splitlines()) for path in Path(RECIPES_DIR).rglob("*.yaml"))
    assert lines <= 0.4 * YAML_LINES_BEFORE_COMPOSITION, lines
