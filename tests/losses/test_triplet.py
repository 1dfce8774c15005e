import pytest
from pytorch_metric_learning import distances, losses, miners

from dml_core.losses.triplet import TripletLoss
from tests.losses.helpers import SEEDS, assert_same_value_and_grad, normalized, random_batch, square


@pytest.mark.parametrize(
    ("mining", "expected"),
    [
        # Squared distances: d_ap = 2, d_an in {4, 2}; margin 2.5 gives violations 0.5 and 2.5.
        ("all", 1.5),  # all 8 triplets: mean of the non-zero ones (four 0.5, four 2.5)
        ("semihard", 0.5),  # only d_an = 4 lies in (d_ap, d_ap + margin]
        ("hard", 2.5),  # nearest negative d_an = 2 per anchor
    ],
)
def test_square_hand_computed(mining, expected):
    x, labels = square()
    assert TripletLoss(margin=2.5, mining=mining)(x, labels).item() == pytest.approx(expected)


def test_no_violation_gives_zero_with_a_graph():
    x, labels = square()
    x.requires_grad_(True)
    loss = TripletLoss(margin=0.2, mining="semihard")(x, labels)  # semi-hard set is empty
    assert loss.item() == 0.0
    loss.backward()
    assert x.grad.abs().sum() == 0


@pytest.mark.parametrize("seed", SEEDS)
@pytest.mark.parametrize("mining", ["all", "semihard", "hard"])
@pytest.mark.parametrize("distance", ["squared_euclidean", "euclidean"])
def test_parity(seed, mining, distance):
    x, labels = random_batch(seed)
    dist = distances.LpDistance(power=2 if distance == "squared_euclidean" else 1, normalize_embeddings=False)
    margin = 0.5
    theirs_loss = losses.TripletMarginLoss(margin=margin, distance=dist)
    miner = {
        "all": None,
        "semihard": miners.TripletMarginMiner(margin=margin, type_of_triplets="semihard", distance=dist),
        "hard": miners.BatchHardMiner(distance=dist),
    }[mining]

    def theirs(e, y):
        return theirs_loss(e, y, miner(e, y)) if miner else theirs_loss(e, y)

    ours = TripletLoss(margin=margin, mining=mining, distance=distance)
    assert_same_value_and_grad(normalized(ours, labels), normalized(theirs, labels), x)


@pytest.mark.parametrize("seed", SEEDS)
def test_parity_cosine_hard(seed):
    x, labels = random_batch(seed)
    dist = distances.CosineSimilarity()
    theirs_loss = losses.TripletMarginLoss(margin=0.3, distance=dist)
    miner = miners.BatchHardMiner(distance=dist)
    ours = TripletLoss(margin=0.3, mining="hard", distance="cosine")

    def theirs(e):
        return theirs_loss(e, labels, miner(e, labels))

    assert_same_value_and_grad(lambda e: ours(e, labels), theirs, x)
