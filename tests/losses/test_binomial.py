import math

import pytest
import torch

from dml_core.errors import InputError
from dml_core.losses.binomial import BinomialDevianceLoss
from tests.losses.helpers import square


def softplus(v: float) -> float:
    return math.log1p(math.exp(v))


def test_square_hand_computed():
    x, labels = square()
    # alpha 2, beta 0.5, C 25. Positives: cosine 0 -> softplus(-2 (0 - 0.5)) = softplus(1).
    # Negatives: cosine -1 -> softplus(25 * 2 * -1.5); cosine 0 -> softplus(25 * 2 * -0.5); half each.
    expected = softplus(1.0) + (softplus(-75.0) + softplus(-25.0)) / 2
    loss = BinomialDevianceLoss()
    assert loss(x, labels).item() == pytest.approx(expected, rel=1e-12)
    assert loss.last_terms["pos"].item() == pytest.approx(softplus(1.0))


def test_cost_weights_negative_pairs():
    # Two points of different classes at cosine 0.8: the only pairs are negative.
    x = torch.tensor([[1.0, 0.0], [0.8, 0.6]], dtype=torch.float64)
    labels = torch.tensor([0, 1])
    for cost in (1.0, 25.0):
        value = BinomialDevianceLoss(neg_cost=cost)(x, labels).item()
        assert value == pytest.approx(softplus(cost * 2 * (0.8 - 0.5)))


def test_gradient_pushes_negatives_apart():
    x = torch.tensor([[1.0, 0.0], [0.8, 0.6]], dtype=torch.float64, requires_grad=True)
    BinomialDevianceLoss()(x, torch.tensor([0, 1])).backward()
    step = x - 0.01 * x.grad
    cos = torch.nn.functional.cosine_similarity(step[0], step[1], dim=0)
    assert cos < 0.8


def test_distance_must_be_a_similarity():
    with pytest.raises(InputError, match="binomial: distance must be one of cosine, dot"):
        BinomialDevianceLoss(distance="euclidean")
