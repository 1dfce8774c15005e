import math

import pytest
import torch
from pytorch_metric_learning import distances, losses
from pytorch_metric_learning.utils import loss_and_miner_utils as lmu

from dml_core.errors import InputError
from dml_core.losses.npair import NPairLoss, every_sample_indices, npair_indices
from tests.losses.helpers import SEEDS, assert_same_value_and_grad, random_batch, square


def test_square_hand_computed():
    x, labels = square()
    # Pairs (A, B) and (C, D); all inner products between anchors and candidates are 0 -> log 2 each.
    loss = NPairLoss()
    assert loss(x, labels).item() == pytest.approx(math.log(2) + 0.002 * 1.0)  # unit norms
    assert loss.last_terms["npair"].item() == pytest.approx(math.log(2))
    # cgml's Eq. 6: negatives are all other-class samples: A sees C (A.C = -1) and D (0).
    all_negs = NPairLoss(l2_weight=0.0, negatives="all")(x, labels).item()
    assert all_negs == pytest.approx(math.log(2 + math.exp(-1)))
    # anml's improved N-pair (Eq. 31), gamma=2, lambda=0.5: log(1 + e^(2 (0 - 0.5 - 0))) / 2.
    improved = NPairLoss(l2_weight=0.0, scale=2.0, offset=0.5)(x, labels).item()
    assert improved == pytest.approx(math.log(1 + math.exp(-1)) / 2)


def test_regulariser_is_mean_squared_norm_of_pair_members():
    x, labels = square()
    x = x * torch.tensor([[2.0], [1.0], [1.0], [3.0]], dtype=torch.float64)
    loss = NPairLoss(l2_weight=0.5)
    loss(x, labels)
    assert loss.last_terms["l2"].item() == pytest.approx((4 + 1 + 1 + 9) / 4)


def test_pairs_are_first_two_of_each_class():
    a, p = npair_indices(torch.tensor([2, 0, 2, 1, 0, 2]))
    assert sorted(zip(a.tolist(), p.tolist(), strict=True)) == [(0, 2), (1, 4)]
    a, _ = npair_indices(torch.tensor([0, 1, 2]))
    assert len(a) == 0


@pytest.mark.parametrize("seed", SEEDS)
def test_parity_without_regulariser(seed):
    x, labels = random_batch(seed)
    theirs = losses.NPairsLoss(distance=distances.DotProductSimilarity(normalize_embeddings=False))
    ours = NPairLoss(l2_weight=0.0)
    assert_same_value_and_grad(lambda e: ours(e, labels), lambda e: theirs(e, labels), x)


def test_every_sample_anchors_its_class_cycle():
    anchors, positives = every_sample_indices(torch.tensor([0, 1, 0, 0, 1, 2]))
    # class 0 at 0, 2, 3: 0 -> 2 -> 3 -> 0; class 1 at 1, 4: 1 <-> 4; the singleton class 2 anchors nothing
    assert anchors.tolist() == [0, 1, 2, 3, 4]
    assert positives.tolist() == [2, 4, 3, 0, 1]
    assert every_sample_indices(torch.tensor([0, 1, 2]))[0].numel() == 0


def test_all_anchors_hand_computed():
    # 1-D embeddings, inner product = product. Class 0: x0 = 1, x2 = 2, x3 = 0.5; class 1: x1 = -1, x4 = -2;
    # class 2: the singleton x5 = 3 (no anchor; a negative under "all" only).
    x = torch.tensor([[1.0], [-1.0], [2.0], [0.5], [-2.0], [3.0]], dtype=torch.float64)
    labels = torch.tensor([0, 1, 0, 0, 1, 2])

    def term(positive: float, negatives: list[float]) -> float:  # log(1 + sum_j exp(x_i.x_j - x_i.x_i+))
        return math.log(1 + sum(math.exp(n - positive) for n in negatives))

    # anchor: x_i.x_i+ and the x_i.x_j of its negatives (pairs: the other-class samples of classes 0 and 1)
    pairs = [
        term(2, [-1, -2]),
        term(2, [-1, -2, -0.5]),
        term(1, [-2, -4]),
        term(0.5, [-0.5, -1]),
        term(2, [-2, -4, -1]),
    ]
    with_singleton = [
        term(2, [-1, -2, 3]),
        term(2, [-1, -2, -0.5, -3]),
        term(1, [-2, -4, 6]),
        term(0.5, [-0.5, -1, 1.5]),
        term(2, [-2, -4, -1, -6]),
    ]
    loss = NPairLoss(l2_weight=0.1, anchors="all", negatives="pairs")
    assert loss(x, labels).item() == pytest.approx(sum(pairs) / 5 + 0.1 * (1 + 1 + 4 + 0.25 + 4) / 5, rel=1e-12)
    assert loss.last_terms["npair"].item() == pytest.approx(sum(pairs) / 5, rel=1e-12)
    every = NPairLoss(l2_weight=0.0, anchors="all", negatives="all")(x, labels).item()
    assert every == pytest.approx(sum(with_singleton) / 5, rel=1e-12)


@pytest.mark.parametrize("seed", SEEDS)
def test_all_anchors_parity_with_ntxent_on_our_pairs(seed):
    # Eq. 6 per anchor is InfoNCE at temperature 1 on inner products: pml's NTXentLoss given our (anchor,
    # positive) pairs and every negative pair averages the same terms
    x, labels = random_batch(seed)  # 4 classes x 3, shuffled
    anchors, positives = every_sample_indices(labels)
    _, _, negative_anchors, negatives = lmu.get_all_pairs_indices(labels)
    theirs = losses.NTXentLoss(temperature=1.0, distance=distances.DotProductSimilarity(normalize_embeddings=False))
    ours = NPairLoss(l2_weight=0.0, anchors="all", negatives="all")
    assert_same_value_and_grad(
        lambda e: ours(e, labels), lambda e: theirs(e, labels, (anchors, positives, negative_anchors, negatives)), x
    )


@pytest.mark.parametrize("seed", SEEDS)
def test_all_anchors_parity_with_ntxent_when_each_class_has_two_samples(seed):
    # two images per class (a PK batch with K = 2): each anchor's only positive is its class partner, the pairs
    # NTXentLoss forms by itself
    x, labels = random_batch(seed, classes=5, per_class=2)
    theirs = losses.NTXentLoss(temperature=1.0, distance=distances.DotProductSimilarity(normalize_embeddings=False))
    ours = NPairLoss(l2_weight=0.0, anchors="all", negatives="all")
    assert_same_value_and_grad(lambda e: ours(e, labels), lambda e: theirs(e, labels), x)


def test_bad_anchor_rule_is_an_input_error():
    with pytest.raises(InputError, match="npair: anchors must be one of one_per_class, all; got 'every'"):
        NPairLoss(anchors="every")
