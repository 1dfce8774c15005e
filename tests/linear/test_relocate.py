"""An absolute plan path of an old linear results file becomes the repository-relative plan of the same hash."""

import json
import shutil

import pytest

from dml_core.errors import InputError
from dml_core.linear.relocate import relocate_plan_path
from dml_core.output_paths import REPOSITORY_ROOT
from dml_core.results import load_results

# A committed linear results file whose plan path is repository-relative (as every run records it now).
COMMITTED = REPOSITORY_ROOT / "results" / "anml" / "lanml-plus-uci-iris-seed0.json"


def _with_plan_path(tmp_path, plan_path: str, **plan_fields):
    payload = json.loads(COMMITTED.read_text())
    payload["plan"].update(path=plan_path, **plan_fields)
    path = tmp_path / COMMITTED.name
    path.write_text(json.dumps(payload))
    return path, payload


def test_an_absolute_plan_path_is_rewritten_and_nothing_else_changes(tmp_path):
    relative = json.loads(COMMITTED.read_text())["plan"]["path"]
    path, before = _with_plan_path(tmp_path, f"/some/checkout/{relative}")
    assert relocate_plan_path(path)
    after = json.loads(path.read_text())
    assert after["plan"] == {**before["plan"], "path": relative, "path_relocated": True}
    assert {k: v for k, v in after.items() if k != "plan"} == {k: v for k, v in before.items() if k != "plan"}
    assert load_results(path).plan.path_relocated
    assert not relocate_plan_path(path)  # already relative: nothing to do


def test_a_relative_path_is_left_alone(tmp_path):
    path = tmp_path / COMMITTED.name
    shutil.copy(COMMITTED, path)
    assert not relocate_plan_path(path)
    assert path.read_bytes() == COMMITTED.read_bytes()


def test_a_plan_that_changed_since_the_run_is_refused_and_the_file_kept(tmp_path):
    path, _ = _with_plan_path(tmp_path, "/some/checkout/plan.yaml", sha256="0" * 64)
    kept = path.read_bytes()
    with pytest.raises(InputError, match=r"field plan\.sha256: expected the settings hash of reproduce/anml/linear/"):
        relocate_plan_path(path)
    assert path.read_bytes() == kept
