"""The gate's index check: a deep run's recorded split hashes against the index prepared on this machine; where
the data or the record is missing, the tables say once what was not checked."""

from dml_core.data.index import IndexRow, index_hashes, write_index
from dml_core.results import validate_results
from dml_core.tables.gate.index_check import IndexCheck
from tests.tables.synthetic import pinned_payload

ROWS = [IndexRow("001.Bird/a.jpg", 1, "train"), IndexRow("001.Bird/b.jpg", 1, "train"),
        IndexRow("101.Gull/c.jpg", 101, "test"), IndexRow("101.Gull/d.jpg", 101, "test")]  # fmt: skip


def _results(hashes):
    payload = pinned_payload()
    if hashes is not None:
        payload["index_hashes"] = hashes
    return validate_results(payload, "results.json")


def test_the_index_the_run_recorded_is_the_one_prepared_here(tmp_path):
    write_index(tmp_path / "cub200", ROWS)
    check = IndexCheck(tmp_path)
    assert check.problem(tmp_path / "r.json", _results(index_hashes(ROWS))) is None
    assert check.notes() == []


def test_a_run_on_other_splits_is_refused_by_split(tmp_path):
    write_index(tmp_path / "cub200", ROWS)
    swapped = [ROWS[0], IndexRow("001.Bird/b.jpg", 1, "test"), *ROWS[2:]]  # one image moved from train to test
    problem = IndexCheck(tmp_path).problem(tmp_path / "r.json", _results(index_hashes(swapped)))
    assert problem.startswith(f"field index_hashes.test: expected {index_hashes(ROWS)['test'][:12]}… (the index ")
    assert problem.endswith(
        f"found {index_hashes(swapped)['test'][:12]}…: the run did not use this machine's cub200 test"
    )


def test_what_cannot_be_compared_is_said_once(tmp_path):
    check = IndexCheck(tmp_path)  # no cub200 prepared here
    for name in ("a.json", "b.json"):
        assert check.problem(tmp_path / name, _results(index_hashes(ROWS))) is None
    assert check.problem(tmp_path / "old.json", _results(None)) is None
    assert check.notes() == [
        "index hashes not checked for cub200: the data is not prepared on this machine (looked under the data "
        "root: --data-root or $DML_DATA_ROOT)",
        "index hashes not checked for 1 results file(s) written before they were recorded (old.json)",
    ]
