"""The base losses' ``reduction`` (reading cgml.reduction): "sum" is cgml's Eqs. 5-7 as printed, "mean" the usual
average; on hand-computed fixtures the two differ by the number of terms each averages over."""

import math

import pytest
import torch

from dml_core.errors import InputError
from dml_core.losses.binomial import BinomialDevianceLoss
from dml_core.losses.npair import NPairLoss
from dml_core.losses.triplet import TripletLoss


def softplus(v: float) -> float:
    return math.log1p(math.exp(v))


def test_triplet_sum_is_the_non_zero_triplets_mean_times_their_number():
    # 1-d points 0, 1 (class 0) and 1.2 (class 1), margin 0.5, squared distances, every triplet:
    # (a=0, p=1, n=2): 1 - 1.44 + 0.5 = 0.06; (a=1, p=0, n=2): 1 - 0.04 + 0.5 = 1.46. Both non-zero.
    x, labels = torch.tensor([[0.0], [1.0], [1.2]], dtype=torch.float64), torch.tensor([0, 0, 1])
    mean = TripletLoss(margin=0.5, mining="all")(x, labels).item()
    total = TripletLoss(margin=0.5, mining="all", reduction="sum")(x, labels).item()
    assert mean == pytest.approx((0.06 + 1.46) / 2, rel=1e-12)
    assert total == pytest.approx(0.06 + 1.46, rel=1e-12) and total == pytest.approx(2 * mean, rel=1e-12)


def test_npair_sum_is_eq6_over_the_anchors_and_the_mean_divides_by_their_number():
    # Eq. 6 with every sample an anchor (its positive the next of its class, cyclically), every other-class sample
    # a negative, inner products of 1-d points 1, 2 (class 0) and 0, -1 (class 1).
    x, labels = torch.tensor([[1.0], [2.0], [0.0], [-1.0]], dtype=torch.float64), torch.tensor([0, 0, 1, 1])
    per_anchor = [
        math.log(1 + math.exp(0 - 2) + math.exp(-1 - 2)),  # x=1, positive 2, negatives 0 and -1
        math.log(1 + math.exp(0 - 2) + math.exp(-2 - 2)),  # x=2, positive 1 (the class's first), negatives 0, -2
        math.log(1 + math.exp(0) + math.exp(0)),  # x=0: every product 0
        math.log(1 + math.exp(-1) + math.exp(-2)),  # x=-1, positive 0, negatives -1 and -2
    ]
    options = {"l2_weight": 0.0, "negatives": "all", "anchors": "all"}
    mean = NPairLoss(**options)(x, labels).item()
    total = NPairLoss(**options, reduction="sum")(x, labels).item()
    assert total == pytest.approx(sum(per_anchor), rel=1e-12)
    assert mean == pytest.approx(sum(per_anchor) / 4, rel=1e-12)


def test_npair_sum_keeps_the_l2_regulariser_a_mean():
    x, labels = torch.tensor([[1.0], [2.0], [0.0], [-1.0]], dtype=torch.float64), torch.tensor([0, 0, 1, 1])
    loss = NPairLoss(l2_weight=0.5, negatives="all", anchors="all", reduction="sum")
    total = loss(x, labels).item()
    assert loss.last_terms["l2"].item() == pytest.approx((1 + 4 + 0 + 1 + 4 + 1 + 1 + 0) / 8, rel=1e-12)
    assert total == pytest.approx(loss.last_terms["npair"].item() + 0.5 * loss.last_terms["l2"].item(), rel=1e-12)


def test_binomial_sum_is_eq7_over_ordered_pairs_without_yis_weights():
    # cosines: (0, 1) 0.6 positive; (0, 2) 0 and (1, 2) 0.8 negative; alpha 2, beta 0.5, C 25.
    x = torch.tensor([[1.0, 0.0], [0.6, 0.8], [0.0, 1.0]], dtype=torch.float64)
    labels = torch.tensor([0, 0, 1])
    pos, neg = softplus(-2 * (0.6 - 0.5)), [softplus(50 * (0 - 0.5)), softplus(50 * (0.8 - 0.5))]
    mean = BinomialDevianceLoss()(x, labels).item()
    total = BinomialDevianceLoss(reduction="sum")(x, labels).item()
    assert mean == pytest.approx(pos + sum(neg) / 2, rel=1e-12)
    assert total == pytest.approx(2 * pos + 2 * sum(neg), rel=1e-12)  # each unordered pair twice, as i, j runs


def test_an_unknown_reduction_is_an_input_error():
    for loss in (TripletLoss, NPairLoss, BinomialDevianceLoss):
        with pytest.raises(InputError, match="reduction"):
            loss(reduction="avg")
