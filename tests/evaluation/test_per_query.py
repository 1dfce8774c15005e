"""Per-query retrieval terms from the evaluator: hand-computed on a tiny case, their means are the reported
metrics on both protocols and on both search paths, and they travel beside (not inside) the JSON record."""

import numpy as np
import pytest

from dml_core.errors import InputError
from dml_core.evaluation import evaluate
from dml_core.evaluation.per_query import NO_POSITIVE, PerQuery


def test_hand_computed_terms_on_a_line():
    # Items on a line; classes 0 0 1 1 0 2 (class 2 has a single item: no same-class item to retrieve).
    x = np.array([[0.0], [1.0], [1.5], [4.0], [10.0], [2.2]])
    y = np.array([0, 0, 1, 1, 0, 2])
    result = evaluate(x, y, (1, 2), metrics=["recall", "map_at_r", "r_precision"], normalize=False)
    terms = result.per_query
    # Neighbours nearest first (item numbers): query 0: 1 2 5 3 4; query 1: 2 0 5 3 4; query 2: 1 5 0 3 4;
    # query 3: 5 2 1 0 4; query 4: 3 5 2 1 0. The first same-class one sits at ranks 0, 1, 3, 1, 3.
    assert terms.first_positive_rank.tolist() == [0, 1, 3, 1, 3, NO_POSITIVE]
    assert terms.first_positive_rank.dtype == np.uint32
    # R = 2 for class 0, 1 for class 1: AP@R of query 0 is (1/2)(1/1 + 0) = 0.5 (item 4 is far); query 1: its
    # second neighbour (item 0) is a hit at precision 1/2 -> (1/2)(1/2) = 0.25; queries 2, 3, 4: no hit within R.
    assert terms.average_precision_at_r.tolist()[:5] == [0.5, 0.25, 0.0, 0.0, 0.0]
    assert terms.r_precision.tolist()[:5] == [0.5, 0.5, 0.0, 0.0, 0.0]
    assert np.isnan(terms.average_precision_at_r[5]) and np.isnan(terms.r_precision[5])
    assert terms.average_precision_at_r.dtype == terms.r_precision.dtype == np.float32
    assert result.metrics["R@1"] == pytest.approx(20.0) and result.metrics["R@2"] == pytest.approx(60.0)
    assert result.metrics["MAP@R"] == pytest.approx(100 * 0.75 / 5)
    assert result.metrics["RP"] == pytest.approx(100 * 1.0 / 5)


def _clusters(seed=0, n_classes=30, per_class=6, dim=16):
    rng = np.random.default_rng(seed)
    labels = np.repeat(np.arange(n_classes), per_class)
    return rng.normal(size=(n_classes, dim))[labels] + 1.2 * rng.normal(size=(len(labels), dim)), labels


@pytest.mark.parametrize("protocol", ["single-set (symmetric search)", "query-gallery (chunked search)"])
def test_the_terms_average_to_every_reported_retrieval_metric(protocol):
    x, y = _clusters()
    kwargs = {}
    if protocol.startswith("query-gallery"):
        mask = np.arange(len(y)) % 2 == 0
        kwargs = {"query_mask": mask, "gallery_mask": ~mask, "chunk_rows": 7}
    result = evaluate(x, y, (1, 2, 4, 8), **kwargs)
    terms = result.per_query
    for metric in ("R@1", "R@2", "R@4", "R@8", "MAP@R", "RP"):
        assert terms.values(metric).mean() == pytest.approx(result.metrics[metric], abs=1e-4), metric
    assert terms.values("NMI") is None and terms.values("F1") is None  # clustering metrics: not per query
    assert len(terms.first_positive_rank) == result.protocol["knn"]["num_queries"]
    assert "per_query" not in result.to_dict() and result.to_dict()["metrics"] == result.metrics


def test_no_retrieval_metric_no_terms_and_recall_alone_keeps_ranks_only():
    x, y = _clusters()
    assert evaluate(x, y, metrics=["nmi"]).per_query is None
    terms = evaluate(x, y, (1,), metrics=["recall"]).per_query
    assert terms.average_precision_at_r is None and terms.r_precision is None
    assert set(terms.to_arrays()) == {"first_positive_rank"} and terms.values("MAP@R") is None


def test_arrays_round_trip_and_foreign_arrays_are_refused():
    terms = PerQuery.from_evaluation(np.array([0, 4, -1]), np.array([1.0, 0.2, np.nan]), np.array([1.0, 0.5, np.nan]))
    back = PerQuery.from_arrays(terms.to_arrays(), "here")
    for name, array in terms.to_arrays().items():
        np.testing.assert_array_equal(back.to_arrays()[name], array)
    with pytest.raises(InputError, match=r"here: expected the arrays first_positive_rank.*found \['ranks'\]"):
        PerQuery.from_arrays({"ranks": np.zeros(3, np.uint32)}, "here")
    with pytest.raises(
        InputError, match=r"here: field r_precision: expected float32 of shape \(3,\), found float32 \(2,"
    ):
        PerQuery.from_arrays({**terms.to_arrays(), "r_precision": np.zeros(2, np.float32)}, "here")
