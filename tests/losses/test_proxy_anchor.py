import math

import pytest
import torch
from pytorch_metric_learning import losses

from dml_core.losses.proxy_anchor import ProxyAnchorLoss
from tests.losses.helpers import SEEDS, assert_same_value_and_grad, random_batch


def test_hand_computed():
    # Proxies (1,0) [class 0], (0,1) [class 1], (-1,0) [class 2, no sample in the batch].
    # Samples (1,0) [0] and (0,1) [1]: cosine 1 to the own proxy, 0 to the other, -1 / 0 to proxy 2.
    loss = ProxyAnchorLoss(3, 2)
    loss.proxies.data = torch.tensor([[1.0, 0.0], [0.0, 1.0], [-1.0, 0.0]], dtype=torch.float64)
    x, labels = torch.tensor([[1.0, 0.0], [0.0, 1.0]], dtype=torch.float64), torch.tensor([0, 1])
    pos = math.log1p(math.exp(-32 * (1 - 0.1)))  # averaged over the 2 proxies with positives
    neg = (2 * math.log1p(math.exp(32 * 0.1)) + math.log1p(math.exp(32 * -0.9) + math.exp(32 * 0.1))) / 3
    assert loss(x, labels).item() == pytest.approx(pos + neg, rel=1e-12)
    assert loss.last_terms["pos"].item() == pytest.approx(pos, rel=1e-9)


@pytest.mark.parametrize("seed", SEEDS)
def test_parity_values_and_gradients(seed):
    x, labels = random_batch(seed)
    ours = ProxyAnchorLoss(6, 5)  # two proxies without samples
    ours.proxies.data = ours.proxies.data.to(torch.float64)
    theirs = losses.ProxyAnchorLoss(num_classes=6, embedding_size=5, margin=0.1, alpha=32)
    theirs.proxies.data = ours.proxies.data.clone()
    assert_same_value_and_grad(lambda e: ours(e, labels), lambda e: theirs(e, labels), x)
    ours(x, labels).backward()
    theirs(x, labels).backward()
    torch.testing.assert_close(ours.proxies.grad, theirs.proxies.grad, rtol=1e-9, atol=1e-11)
