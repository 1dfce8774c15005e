import math

import pytest
import torch
from pytorch_metric_learning import distances, losses

from dml_core.losses import NPairLoss
from dml_core.losses.npair import npair_indices
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
