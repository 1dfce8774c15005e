"""The trainer keeps the per-query terms of the evaluations a selection rule picks (best test R@1, the last one),
checkpoints them, and writes them beside the results file, which names them; a tiny CPU run end to end."""

import numpy as np
import pytest

from dml_core.evaluation.per_query import PerQuery
from dml_core.query_terms_file import companion_path, read_query_terms
from dml_core.recipes import load_recipe, resolve_run
from dml_core.results import load_results
from dml_core.training import train
from dml_core.training.checkpoint import load_checkpoint
from dml_core.training.evaluation import PickedQueryTerms
from dml_core.training.run_description import PlannedRun, RunToTrain
from tests.training.test_trainer import _recipe_file


def _terms(iteration: int) -> PerQuery:
    return PerQuery.from_evaluation(np.array([iteration, 0, -1]))


def test_only_the_picks_are_kept_and_a_passed_over_evaluation_never_comes_back():
    picked, evaluations = PickedQueryTerms(), []
    kept = []
    for iteration, r1 in ((1, 50.0), (2, 60.0), (3, 55.0), (4, 58.0), (5, 70.0)):
        evaluations.append({"iteration": iteration, "metrics": {"R@1": r1}})
        picked.add(iteration, _terms(iteration), evaluations)
        kept.append(sorted(picked.terms))
    # best R@1 and the final one: 1 | 2 | 2 and 3 | 2 and 4 (3 let go) | 5 (both rules)
    assert kept == [[1], [2], [2, 3], [2, 4], [5]]


def test_the_pick_of_the_validation_split_keeps_its_test_terms_too():
    picked, evaluations = PickedQueryTerms(), []
    for iteration, r1, validation_r1 in ((1, 50.0, 30.0), (2, 60.0, 20.0), (3, 55.0, 25.0)):
        validation = {"R@1": validation_r1}
        evaluations.append({"iteration": iteration, "metrics": {"R@1": r1}, "validation_metrics": validation})
        picked.add(iteration, _terms(iteration), evaluations)
    assert sorted(picked.terms) == [1, 2, 3]  # best validation R@1, best test R@1, the final one


def test_without_recall_only_the_final_evaluation_is_kept():
    picked, evaluations = PickedQueryTerms(), []
    for iteration in (1, 2):
        evaluations.append({"iteration": iteration, "metrics": {"NMI": 50.0}})
        picked.add(iteration, None if iteration == 1 else _terms(iteration), evaluations)
    assert sorted(picked.terms) == [2]


def test_the_checkpoint_state_round_trips_and_nothing_kept_writes_nothing(tmp_path):
    picked, evaluations = PickedQueryTerms(), [{"iteration": 3, "metrics": {"R@1": 1.0}}]
    assert picked.write_beside(tmp_path / "results.json") is None and not list(tmp_path.iterdir())
    picked.add(3, _terms(3), evaluations)
    back = PickedQueryTerms(picked.state())
    np.testing.assert_array_equal(back.terms[3].first_positive_rank, picked.terms[3].first_positive_rank)
    assert back.write_beside(tmp_path / "results.json")["iterations"] == [3]


@pytest.mark.slow
@pytest.mark.usefixtures("glyph_data_root")
def test_a_tiny_run_writes_the_terms_of_its_picks_beside_its_results(tmp_path):
    path = _recipe_file(tmp_path, training__iterations=6, training__eval_every=2)
    plan = PlannedRun(load_recipe(path), tmp_path / "run", run=resolve_run(path))
    results_path = train(RunToTrain(plan, progress=False, data_root=tmp_path / "data"))
    results = load_results(results_path)
    picks = {record.iteration for record in results.selections.values()}
    assert results.queries.file == companion_path(results_path).name
    assert set(results.queries.iterations) == picks
    terms = read_query_terms(results_path, results.queries)
    metrics = {e.iteration: e.metrics for e in results.evaluations}
    for iteration in picks:
        for metric in ("R@1", "R@2", "MAP@R", "RP"):
            assert terms[iteration].values(metric).mean() == pytest.approx(metrics[iteration][metric], abs=1e-4)
    assert sorted(load_checkpoint(tmp_path / "run" / "checkpoint.pt")["query_terms"]) == sorted(picks)
