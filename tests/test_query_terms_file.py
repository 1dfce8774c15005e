"""The per-query companion of a results file: it round-trips, the results file records its name, sha256 and
iterations (and loads without it, as older files do), and a missing, altered or foreign companion is refused
by name instead of being read as the run's."""

import hashlib

import numpy as np
import pytest

from dml_core.errors import InputError
from dml_core.evaluation.per_query import PerQuery
from dml_core.query_terms_file import companion_path, read_query_terms, write_query_terms
from dml_core.results import load_results, write_results
from tests.tables.synthetic import results_payload


def _terms(n=50, seed=0):
    rng = np.random.default_rng(seed)
    ranks = rng.integers(-1, 20, n)
    ap = np.where(ranks < 0, np.nan, rng.random(n))
    return PerQuery.from_evaluation(ranks, ap, np.where(ranks < 0, np.nan, rng.random(n)))


def _run(tmp_path, terms=None):
    """A results file (evaluations at iterations 100 and 200) with its companion; returns its path."""
    results_path = tmp_path / "run-seed0.json"
    record = write_query_terms(results_path, terms or {100: _terms(seed=1), 200: _terms(seed=2)})
    payload = results_payload(curve=[{"R@1": 50.0}, {"R@1": 55.0}])
    write_results(results_path, {**payload, "queries": record})
    return results_path


def test_the_companion_round_trips_and_the_results_file_records_it(tmp_path):
    terms = {100: _terms(seed=1), 200: _terms(seed=2)}
    path = _run(tmp_path, terms)
    results = load_results(path)
    companion = companion_path(path)
    assert companion.name == "run-seed0.queries.npz" == results.queries.file
    assert results.queries.sha256 == hashlib.sha256(companion.read_bytes()).hexdigest()
    assert results.queries.bytes == companion.stat().st_size and results.queries.iterations == [100, 200]
    back = read_query_terms(path, results.queries)
    assert sorted(back) == [100, 200]
    for iteration, original in terms.items():
        for name, array in original.to_arrays().items():
            np.testing.assert_array_equal(back[iteration].to_arrays()[name], array)


def test_a_results_file_without_companion_loads_as_before(tmp_path):
    path = write_results(tmp_path / "old.json", results_payload())
    assert load_results(path).queries is None


def test_a_missing_companion_is_reported_naming_the_results_file_and_field(tmp_path):
    path = _run(tmp_path)
    companion_path(path).unlink()
    with pytest.raises(InputError, match=r"run-seed0.json: field queries.file: expected the per-query file "
                                         r"run-seed0.queries.npz beside it, found none"):  # fmt: skip
        read_query_terms(path, load_results(path).queries)


def test_an_altered_companion_is_reported_not_used(tmp_path):
    path = _run(tmp_path)
    # Another run's (valid) companion in its place: same name, other bytes.
    write_query_terms(path, {100: _terms(seed=5), 200: _terms(seed=6)})
    with pytest.raises(InputError, match=r"run-seed0.queries.npz: sha256 \w{12}…, but its results file run-seed0.json "
                                         r"records \w{12}… \(field queries.sha256\)"):  # fmt: skip
        read_query_terms(path, load_results(path).queries)


def test_a_companion_holding_other_iterations_than_recorded_is_refused(tmp_path):
    path = _run(tmp_path)
    results = load_results(path)
    record = write_query_terms(path, {100: _terms(seed=1)})
    results = results.model_copy(update={"queries": results.queries.model_copy(update={"sha256": record["sha256"]})})
    with pytest.raises(InputError, match=r"expected the iterations \[100, 200\] \(field queries.iterations\), "
                                         r"found \['100'\]"):  # fmt: skip
        read_query_terms(path, results.queries)


@pytest.mark.parametrize(
    ("change", "message"),
    [
        ({"iterations": [100, 300]}, r"field \(top level\): queries.iterations: expected iterations of "
                                     r"evaluations, found \[300\]"),
        ({"file": "../elsewhere.queries.npz"}, r"field queries.file: String should match pattern"),
        ({"sha256": "abc"}, r"field queries.sha256: String should match pattern"),
    ],
)  # fmt: skip
def test_a_malformed_record_is_refused(tmp_path, change, message):
    record = {"file": "run-seed0.queries.npz", "sha256": "0" * 64, "bytes": 10, "iterations": [100]}
    payload = results_payload(curve=[{"R@1": 50.0}, {"R@1": 55.0}])
    with pytest.raises(InputError, match=message):
        write_results(tmp_path / "run-seed0.json", {**payload, "queries": record | change})
