"""What the results gate makes of every committed results file (``results/**.json``), as committed in
``committed_admission.json``.

For each file and each tier whose pages the gate serves (full and smoke), two verdicts, each ``admitted`` or the
refusal's line (the repository's root left out of the paths it names):

- ``admission``: ``admit_results`` over the file's folder, where the folder is a paper's (the fair study's files
  are read by its own page, ``tables.fair.study``, not by the gate). The index is not compared (no data root), so
  the verdict does not depend on the datasets prepared on this machine.
- ``pinned recipe``: ``pinned_recipe`` of a deep results file alone, before the rows are checked, so that every
  deep file, the fair study's included, reaches it: the recipe its run, readings and overrides give at that tier
  (and its content hash, which a refusal's line names).

``python -m tests.tables.gate.committed_admission --write`` rewrites the committed listing after a deliberate
change to the gate or a new results file; say in the commit which verdicts changed and why (the test shows the
differences before you do).
"""

from __future__ import annotations

import json
import sys
from functools import cache
from pathlib import Path

from dml_core.output_paths import RECIPES_DIR, REPOSITORY_ROOT
from dml_core.published import load_published
from dml_core.results import ResultsFile, load_results
from dml_core.tables.gate import admission
from dml_core.tables.gate.planned import load_plan
from dml_core.tier import Tier
from dml_core.vocabulary import PAPER_KEYS

COMMITTED = Path(__file__).with_name("committed_admission.json")
RESULTS = REPOSITORY_ROOT / "results"
TIERS = (Tier.FULL, Tier.SMOKE)
ADMITTED = "admitted"


@cache
def _plan(key: str):
    return load_plan(RECIPES_DIR, key)


@cache
def _published(key: str):
    return load_published(key)


def _line(text: str) -> str:
    return text.replace(f"{REPOSITORY_ROOT}/", "")


def _folder_verdicts(folder: Path, tier: Tier) -> dict[Path, str]:
    key = folder.name
    gate = admission.admit_results(_published(key), _plan(key), folder, tier=tier, data_root=None)
    verdicts = {item.path: ADMITTED for item in gate.admitted}
    verdicts.update({refusal.path: _line(refusal.reason) for refusal in gate.refused})
    return verdicts


def _pinned_recipe_verdict(path: Path, tier: Tier) -> str | None:
    results = load_results(path)
    if not isinstance(results, ResultsFile):
        return None  # a linear file has no recipe to pin
    try:
        admission.pinned_recipe(results, _plan(results.paper), tier)
    except admission._Refused as refusal:  # the gate's own reason, as the page would show it
        return _line(str(refusal))
    return ADMITTED


def committed_admission() -> dict[str, dict[str, str]]:
    """``"<tier> <path>" -> {"admission": ..., "pinned recipe": ...}`` for every committed results file."""
    paths = sorted(RESULTS.rglob("*.json"))
    listing: dict[str, dict[str, str]] = {}
    for tier in TIERS:
        gate: dict[Path, str] = {}
        for folder in sorted({path.parent for path in paths if path.parent.name in PAPER_KEYS}):
            gate.update(_folder_verdicts(folder, tier))
        for path in paths:
            verdicts = {"admission": gate.get(path), "pinned recipe": _pinned_recipe_verdict(path, tier)}
            listing[f"{tier.value} {path.relative_to(REPOSITORY_ROOT)}"] = {
                name: verdict for name, verdict in verdicts.items() if verdict is not None
            }
    return listing


def main(argv: list[str]) -> int:
    if argv != ["--write"]:
        print(__doc__)
        return 2
    COMMITTED.write_text(json.dumps(committed_admission(), indent=1, sort_keys=True) + "\n")
    print(f"wrote {COMMITTED}")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
