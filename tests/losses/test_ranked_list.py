import math

import pytest
import torch
from pytorch_metric_learning import losses

from dml_core.losses.ranked_list import RankedListLoss
from tests.losses.helpers import SEEDS, SQRT2, normalized, random_batch, square, value_and_grad


def test_square_hand_computed():
    x, labels = square()
    # boundary 1.5, margin 0.4: positives (sqrt 2) beyond 1.1 violate by sqrt 2 - 1.1; the negative at
    # sqrt 2 < 1.5 violates by 1.5 - sqrt 2 (alone in N*, weight 1), the one at 2 does not.
    loss = RankedListLoss(boundary=1.5, margin=0.4)
    assert loss(x, labels).item() == pytest.approx((SQRT2 - 1.1) + (1.5 - SQRT2))
    # boundary 2.5: no positive beyond 2.1; both negatives in N* with weights exp(10 v).
    v1, v2 = 0.5, 2.5 - SQRT2
    neg = (v1 * math.exp(10 * v1) + v2 * math.exp(10 * v2)) / (math.exp(10 * v1) + math.exp(10 * v2))
    loss = RankedListLoss(boundary=2.5, margin=0.4)
    assert loss(x, labels).item() == pytest.approx(neg)
    assert loss.last_terms["pos"].item() == 0.0


def test_detached_weights_give_the_papers_gradient():
    x, labels = square()
    loss = RankedListLoss(boundary=2.5, margin=0.4)
    _, grad = value_and_grad(lambda e: loss(e, labels), x)

    def constant_weight_loss(e):  # the same sum with the softmax weights computed outside the graph
        d = torch.cdist(e, e)
        neg = labels.unsqueeze(0) != labels.unsqueeze(1)
        w = torch.softmax(torch.where(neg, 10 * (2.5 - d.detach()), float("-inf")), dim=1)
        return (w * torch.where(neg, 2.5 - d, 0.0)).sum(dim=1).mean()

    _, expected = value_and_grad(constant_weight_loss, x)
    torch.testing.assert_close(grad, expected)


@pytest.mark.filterwarnings("ignore:Values of Tp or Tn are too high")  # PML warns for Tn > 5
@pytest.mark.parametrize("seed", SEEDS)
def test_parity_with_pml_weights_not_detached(seed):
    x, labels = random_batch(seed)
    ours = RankedListLoss(margin=0.4, boundary=1.2, temperature_neg=10.0, detach_weights=False)
    theirs = losses.RankedListLoss(margin=0.4, Tn=10.0, imbalance=0.5, alpha=1.2, Tp=0.0)
    ours_value, ours_grad = value_and_grad(normalized(ours, labels), x)
    their_value, their_grad = value_and_grad(normalized(theirs, labels), x)
    # PML writes (1 - imbalance) L_P + imbalance L_N = half of ours, and adds 1e-5 per batch entry to each
    # weight sum (a 12-sample batch: ~1e-4 of a sum >= 1), hence the looser tolerance.
    torch.testing.assert_close(ours_value, 2 * their_value, rtol=1e-3, atol=1e-6)
    torch.testing.assert_close(ours_grad, 2 * their_grad, rtol=1e-3, atol=1e-6)
    assert ours_value > 0
