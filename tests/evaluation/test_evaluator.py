"""evaluate(): protocols, validation errors, and what travels with the values."""

import subprocess
import sys

import numpy as np
import pytest
import torch

from dml_core.errors import InputError
from dml_core.evaluation import KMeansConfig, evaluate, recall_ks_for
from dml_core.evaluation.clustering import kmeans_assign
from dml_core.evaluation.knn import rank_neighbours, rank_within_set


def _clusters(n_classes=4, per_class=5, dim=8, seed=0, spread=0.1):
    rng = np.random.default_rng(seed)
    centres = rng.normal(size=(n_classes, dim)) * 5
    labels = np.repeat(np.arange(n_classes), per_class)
    return centres[labels] + spread * rng.normal(size=(len(labels), dim)), labels


def test_well_separated_clusters_score_perfectly():
    x, y = _clusters()
    # k-means++ seeding (scikit-learn) finds the 4 blobs; faiss' random seeding may merge two.
    result = evaluate(x, y, (1, 2, 4), kmeans=KMeansConfig("sklearn"))
    assert result.metrics == pytest.approx(
        {"R@1": 100.0, "R@2": 100.0, "R@4": 100.0, "MAP@R": 100.0, "RP": 100.0, "NMI": 100.0, "F1": 100.0}
    )


def test_protocol_records_how_values_were_computed():
    x, y = _clusters()
    result = evaluate(x, y, (1,), normalize=False, kmeans=KMeansConfig("sklearn", 7, 3))
    protocol = result.protocol
    assert protocol["self_exclusion"] == "by index"
    assert protocol["normalize"] is False
    assert protocol["clustering"]["backend"] == "sklearn"
    assert protocol["clustering"]["iterations"] == 7
    assert protocol["clustering"]["seed"] == 3
    assert protocol["clustering"]["n_clusters"] == 4
    assert protocol["clustering"]["nmi_normalization"] == "arithmetic"
    assert "tie_rule" in protocol["knn"]
    assert set(result.timing) == {"knn_seconds", "clustering_seconds"}


def test_normalisation_changes_the_ranking():
    # Query 0 is nearer item 1 in Euclidean space, but item 2 in angle.
    x = np.array([[1.0, 0.0], [1.0, 1.0], [10.0, 0.5], [-1.0, -1.0]])
    y = np.array([0, 1, 0, 1])
    raw = evaluate(x, y, (1,), metrics=["recall"], normalize=False)
    normalised = evaluate(x, y, (1,), metrics=["recall"], normalize=True)
    assert raw.metrics["R@1"] != normalised.metrics["R@1"]


def test_query_gallery_protocol_hand_computed():
    x = np.array([[0.0], [12.0], [0.4], [9.0], [0.2], [20.0]])
    y = np.array([0, 1, 1, 1, 0, 2])
    query = np.array([True, True, False, False, False, False])
    gallery = ~query
    result = evaluate(
        x, y, (1, 2), metrics=["recall", "map_at_r"], normalize=False, query_mask=query, gallery_mask=gallery
    )
    # Query 0 (class 0): nearest gallery item 4 (0.2, class 0) -> hit at 1.
    # Query 1 (class 1) at 12: gallery 9.0 (class 1), 20.0, 0.4 (class 1): R=2, second positive at rank 3.
    assert result.metrics["R@1"] == 100.0
    assert result.metrics["MAP@R"] == pytest.approx(100 * np.mean([1.0, 0.5]))
    assert result.protocol["self_exclusion"] == "none"


def test_singleton_class_is_left_out_and_counted():
    x, y = _clusters(n_classes=3, per_class=3)
    x = np.vstack([x, [[100.0] * 8]])
    y = np.append(y, 99)
    result = evaluate(x, y, (1,), metrics=["recall"])
    assert result.metrics["R@1"] == 100.0
    assert result.protocol["knn"]["queries_without_positive"] == 1


@pytest.mark.parametrize(
    ("embeddings", "labels", "kwargs", "message"),
    [
        (np.zeros((4, 2)), np.zeros(3), {}, "labels: expected one label per embedding (4), found 3"),
        (np.array([[0.0, 1.0], [np.nan, 1.0], [1, 1], [2, 2]]), np.array([0, 0, 1, 1]), {}, "NaN or inf in 1 row"),
        (np.ones((4, 2)), np.zeros(4), {}, "at least 2 classes"),
        (np.ones((4, 2)), np.array([0, 0, 1, 1]), {"recall_ks": (1, 4)}, "K=4 is larger than the 3"),
        (np.ones(4), np.array([0, 0, 1, 1]), {}, "expected a non-empty 2-D array"),
        (np.ones((4, 2)), np.array([0, 0, 1, 1]), {"metrics": ["recall", "bogus"]}, "unknown metric 'bogus'"),
        (np.ones((4, 2)), np.array([0, 0, 1, 1]), {"query_mask": np.ones(4, bool)}, "both or neither"),
        (
            np.ones((4, 2)),
            np.array([0, 0, 1, 1]),
            {"query_mask": np.ones(4, bool), "gallery_mask": np.ones(4, bool)},
            "expected disjoint sets",
        ),
        (np.ones((4, 2)), np.array([0, 1, 2, 3]), {"recall_ks": (1,)}, "same-class item to retrieve"),
    ],
)
def test_bad_input_is_a_clear_error(embeddings, labels, kwargs, message):
    with pytest.raises(InputError) as error:
        evaluate(embeddings, labels, **kwargs)
    assert message in str(error.value)


def test_dataset_k_lists():
    assert recall_ks_for("sop") == (1, 10, 100, 1000)
    assert recall_ks_for("inshop") == (1, 10, 20, 30, 40, 50)
    assert recall_ks_for("cub200") == recall_ks_for("cars196") == (1, 2, 4, 8, 16, 32)
    with pytest.raises(InputError, match=r"field data\.dataset: unknown dataset with a Recall@K list 'cub'"):
        recall_ks_for("cub")


def test_faiss_clustering_is_seeded():
    x, y = _clusters(n_classes=6, per_class=10, spread=3.0)
    first = evaluate(x, y, metrics=["nmi", "f1"], kmeans=KMeansConfig(seed=5))
    second = evaluate(x, y, metrics=["nmi", "f1"], kmeans=KMeansConfig(seed=5))
    assert first.metrics == second.metrics


@pytest.mark.parametrize(
    ("embeddings", "message"),
    [
        (np.zeros((20, 0)), r"embeddings: expected a non-empty 2-D array \(n, d\) with d >= 1, found shape \(20, 0\)"),
        (np.zeros((0, 8)), r"found shape \(0, 8\)"),
        (np.zeros(20), r"found shape \(20,\)"),
        (np.where(np.arange(160).reshape(20, 8) == 9, np.inf, 1.0), r"found NaN or inf in 1 row\(s\) \(first: 1\)"),
    ],
)
def test_empty_zero_width_and_non_finite_embeddings_are_refused_before_any_search(embeddings, message):
    _, y = _clusters()
    with pytest.raises(InputError, match=message):
        evaluate(embeddings, y[: len(embeddings)] if len(embeddings) else y[:0], (1,))


@pytest.mark.parametrize("missing", [np.nan, np.inf, None])
def test_missing_labels_are_refused_not_made_one_class(missing):
    x, y = _clusters()
    labels = y.astype(float) if missing is not None else y.astype(object)
    labels[::2] = missing
    with pytest.raises(
        InputError, match=r"labels: expected a class label for every item, found NaN, inf or None in 10"
    ):
        evaluate(x, labels, (1,))


def test_string_labels_still_work():
    x, y = _clusters()
    assert evaluate(x, np.array([f"class-{v}" for v in y]), (1,), metrics=("recall",)).metrics["R@1"] == 100.0


def test_zero_width_clustering_and_search_are_refused_directly():
    with pytest.raises(InputError, match=r"found shape \(5, 0\)"):
        kmeans_assign(np.zeros((5, 0)), 2, KMeansConfig())
    with pytest.raises(InputError, match=r"n_clusters: expected 1 to 5 \(the number of points\), found 6"):
        kmeans_assign(np.zeros((5, 3)), 6, KMeansConfig())
    with pytest.raises(InputError, match=r"gallery: expected a non-empty 2-D array"):
        rank_neighbours(torch.zeros(3, 2), torch.zeros(0, 2), torch.zeros(3), torch.zeros(0), k=1)
    with pytest.raises(InputError, match=r"queries and gallery: expected the same width, found 2 and 3"):
        rank_neighbours(torch.zeros(3, 2), torch.zeros(4, 3), torch.zeros(3), torch.zeros(4), k=1)
    with pytest.raises(InputError, match=r"embeddings: expected a non-empty 2-D array"):
        rank_within_set(torch.zeros(4, 0), torch.zeros(4), k=1)


def test_a_zero_width_evaluation_ends_in_one_line_not_a_signal():
    # faiss divides by the width: without the check the process dies of SIGFPE (exit -8) with no message.
    code = (
        "import numpy as np\n"
        "from dml_core.evaluation import KMeansConfig, evaluate\n"
        "evaluate(np.zeros((6, 0)), np.array([0, 0, 1, 1, 2, 2]), (1,), kmeans=KMeansConfig('faiss'))\n"
    )
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=300)
    assert done.returncode == 1 and "InputError: embeddings: expected a non-empty 2-D array" in done.stderr
