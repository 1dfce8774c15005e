import math

import pytest
from pytorch_metric_learning import losses, miners

from dml_core.losses import MultiSimilarityLoss
from tests.losses.helpers import SEEDS, assert_same_value_and_grad, random_batch, square


@pytest.mark.parametrize("lam", [1.0, 0.5])
def test_square_hand_computed(lam):
    x, labels = square()
    # Anchor A: positive B (S = 0); negatives C (S = -1), D (S = 0). Mining with eps 0.1 keeps B
    # (0 - 0.1 < max neg 0) and D (0 + 0.1 > min pos 0), drops C. Every anchor is alike.
    pos = math.log1p(math.exp(-2 * (0 - lam))) / 2
    neg = math.log1p(math.exp(50 * (0 - lam))) / 50
    loss = MultiSimilarityLoss(lam=lam)
    assert loss(x, labels).item() == pytest.approx(pos + neg, rel=1e-12)
    assert loss.last_terms["neg"].item() == pytest.approx(neg, rel=1e-12)


def test_without_mining_uses_every_pair():
    x, labels = square()
    neg = math.log1p(math.exp(50 * (-1 - 0.5)) + math.exp(50 * (0 - 0.5))) / 50
    loss = MultiSimilarityLoss(lam=0.5, epsilon=None)
    loss(x, labels)
    assert loss.last_terms["neg"].item() == pytest.approx(neg, rel=1e-12)


@pytest.mark.parametrize("seed", SEEDS)
@pytest.mark.parametrize("lam", [0.5, 1.0])
def test_parity_with_pml_loss_and_miner(seed, lam):
    x, labels = random_batch(seed, classes=3, per_class=4, dim=3)  # low dim: many pairs survive mining
    theirs_loss, miner = (
        losses.MultiSimilarityLoss(alpha=2, beta=50, base=lam),
        miners.MultiSimilarityMiner(0.1),
    )
    ours = MultiSimilarityLoss(lam=lam)
    assert_same_value_and_grad(
        lambda e: ours(e, labels), lambda e: theirs_loss(e, labels, miner(e, labels)), x, rtol=1e-8
    )
