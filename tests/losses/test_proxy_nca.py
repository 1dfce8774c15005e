import math

import pytest
import torch
from pytorch_metric_learning import losses

from dml_core.losses.proxy_nca import ProxyNCALoss
from tests.losses.helpers import SEEDS, SQRT2, assert_same_value_and_grad, random_batch


def with_proxies(loss: ProxyNCALoss, proxies: list[list[float]]) -> ProxyNCALoss:
    loss.proxies.data = torch.tensor(proxies, dtype=torch.float64)
    return loss


def test_hand_computed():
    # Proxies (1, 0) for class 0 and (0, 1) for class 1. Samples (1, 0) [0], (0, 1) [1], (1, 1)/sqrt 2 [0].
    # Squared distances: 0 to the own proxy and 2 to the other for the first two; 2 - sqrt 2 to both
    # for the third.
    x = torch.tensor([[1.0, 0.0], [0.0, 1.0], [3.0, 3.0]], dtype=torch.float64)
    labels = torch.tensor([0, 1, 0])
    paper = with_proxies(ProxyNCALoss(2, 2), [[1.0, 0.0], [0.0, 1.0]])
    # Paper: d(x, p_y) + log sum_{z != y} exp(-d(x, p_z)) -> -2, -2, 0.
    assert paper(x, labels).item() == pytest.approx(-4 / 3)
    softmax = with_proxies(ProxyNCALoss(2, 2, exclude_positive=False), [[1.0, 0.0], [0.0, 1.0]])
    expected = (2 * math.log(1 + math.exp(-2)) + math.log(2)) / 3
    assert softmax(x, labels).item() == pytest.approx(expected)
    scaled = with_proxies(ProxyNCALoss(2, 2, scale=3.0), [[2.0, 0.0], [0.0, 5.0]])  # proxies are normalised
    assert scaled(x, labels).item() == pytest.approx((-6 - 6 + 0) / 3)
    assert 2 - SQRT2 > 0  # the third sample sits between the proxies


def test_proxies_are_the_only_parameters_and_learn():
    loss = ProxyNCALoss(3, 4)
    assert [p.shape for p in loss.parameters()] == [torch.Size([3, 4])]
    x, labels = torch.randn(6, 4), torch.tensor([0, 1, 2, 0, 1, 2])
    loss(x, labels).backward()
    assert loss.proxies.grad.abs().sum() > 0


@pytest.mark.parametrize("seed", SEEDS)
def test_parity_softmax_form(seed):
    x, labels = random_batch(seed)
    theirs = losses.ProxyNCALoss(num_classes=4, embedding_size=5)
    ours = ProxyNCALoss(4, 5, exclude_positive=False)
    with torch.no_grad():
        theirs.proxies.data = ours.proxies.data.to(torch.float64).clone()
        ours.proxies.data = ours.proxies.data.to(torch.float64)
    assert_same_value_and_grad(lambda e: ours(e, labels), lambda e: theirs(e, labels), x)
