"""Results files written before plan paths were recorded relative to the repository: name their plan by its
repository-relative path, after checking it is the same plan.

A linear results file records the plan it came from by id, path and the sha256 of the run's resolved settings.
Runs made before ``output_paths.recorded_path`` existed recorded the absolute path of the checkout that ran them,
which names one machine. The plan is ``reproduce/<paper>/linear/<plan id>.yaml``; when its settings for the run's
method (smoke or not) hash to the recorded sha256, it is the same plan, and the path is rewritten to that file's
repository-relative path, with ``plan.path_relocated`` set so the file says so. Nothing else in the file changes:
not a number, not a timing, not the git record. A plan that does not hash the same is refused, the file left as is.

    python -m dml_core.linear.relocate results/anml/*.json
"""

from __future__ import annotations

import sys
from collections.abc import Sequence
from pathlib import Path

from dml_core.atomic_io import read_json_object
from dml_core.errors import InputError
from dml_core.linear.plan import LINEAR_PLANS_FOLDER, load_linear_plan, run_settings, settings_hash, smoke_plan
from dml_core.output_paths import RECIPES_DIR, recorded_path
from dml_core.results import LinearResultsFile, load_results, write_results


def relocate_plan_path(results_path: str | Path, recipes_dir: Path = RECIPES_DIR) -> bool:
    """Rewrite an absolute ``plan.path`` of a linear results file to the repository's plan of the same settings
    hash; True when the file changed, False when there was nothing to do (not linear, or already relative)."""
    results_path = Path(results_path)
    results = load_results(results_path)
    if not isinstance(results, LinearResultsFile) or results.plan.path is None:
        return False
    if not Path(results.plan.path).is_absolute():
        return False
    plan_file = recipes_dir / results.paper / LINEAR_PLANS_FOLDER / f"{results.plan.id}.yaml"
    if not plan_file.is_file():
        raise InputError(f"{results_path}: field plan.id: expected a plan file {recorded_path(plan_file)}, found none")
    plan = load_linear_plan(plan_file)
    found = settings_hash(run_settings(smoke_plan(plan) if results.smoke else plan, results.method, results.tier))
    if found != results.plan.sha256:
        raise InputError(
            f"{results_path}: field plan.sha256: expected the settings hash of {recorded_path(plan_file)} for "
            f"{results.method} ({found}), found {results.plan.sha256}; the plan changed since the run, so the file "
            "is left as it is"
        )
    payload = read_json_object(results_path, "results file")
    payload["plan"].update(path=recorded_path(plan_file), path_relocated=True)
    write_results(results_path, payload)
    return True


def main(paths: Sequence[str]) -> int:
    for path in paths:
        if relocate_plan_path(path):
            print(f"{path}: plan.path made repository-relative (same settings hash)")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
