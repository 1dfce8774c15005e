"""The repository's tolerances file loads and follows the run-to-run R@1 spread (about 1-1.5 points on CUB)."""

import pytest

from dml_core.errors import InputError
from dml_core.tables.gate.tolerances import load_tolerances


def test_the_repository_file_is_valid_and_not_tighter_than_run_to_run_noise():
    tolerances = load_tolerances()
    assert tolerances.for_metric("R@1") >= 1.0
    assert tolerances.for_metric("R@1000") == tolerances.default


def test_unknown_fields_and_missing_files_are_errors(tmp_path):
    path = tmp_path / "t.yaml"
    path.write_text("default: 1\nmetrix: {}\n")
    with pytest.raises(InputError, match="field metrix: Extra inputs are not permitted"):
        load_tolerances(path)
    with pytest.raises(InputError, match="tolerances file not found"):
        load_tolerances(tmp_path / "none.yaml")


def test_a_negative_tolerance_is_refused_naming_file_and_metric(tmp_path):
    path = tmp_path / "t.yaml"
    path.write_text("default: 1\nmetrics: {NMI: -0.5}\n")
    with pytest.raises(InputError, match=r"t\.yaml: .*field metrics\.NMI: Input should be greater than or equal to 0"):
        load_tolerances(path)
