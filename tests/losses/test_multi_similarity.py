import math

import pytest
import torch
from pytorch_metric_learning import losses, miners

from dml_core.errors import InputError
from dml_core.losses.base import indices_to_mask
from dml_core.losses.mining import multi_similarity_pairs
from dml_core.losses.multi_similarity import MultiSimilarityLoss
from tests.losses.helpers import SEEDS, assert_same_value_and_grad, random_batch, square, value_and_grad


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


@pytest.mark.parametrize("version", ["v1", "v2"])
def test_versions_hand_computed_on_distances(version):
    # gpw Sec. IV-B5 setting: Euclidean distance, m = 1, no mining here. Anchor A: positive at sqrt 2,
    # negatives at 2 and sqrt 2; "v2" drops the 1 inside each log. Every anchor is alike.
    x, labels = square()
    one = 1.0 if version == "v1" else 0.0
    pos = math.log(one + math.exp(2 * (math.sqrt(2) - 1))) / 2
    neg = math.log(one + math.exp(50 * (1 - 2)) + math.exp(50 * (1 - math.sqrt(2)))) / 50
    loss = MultiSimilarityLoss(lam=1.0, epsilon=None, distance="euclidean", version=version)
    assert loss(x, labels).item() == pytest.approx(pos + neg, rel=1e-12)


@pytest.mark.parametrize("seed", SEEDS)
@pytest.mark.parametrize("version", ["v1", "v2"])
def test_gradient_is_gpw_eq39_weighting(seed, version):
    # gpw Eq. 39: MS = sum w+ (D - m) + sum w- (m - D) with detached w+- = exp(.) / (1 + sum exp(.)); "v2"
    # drops the 1 from the denominators. Same gradient as the loss (the values differ).
    x, labels = random_batch(seed, classes=3, per_class=4, dim=3)
    x = torch.nn.functional.normalize(x, dim=1)
    one = 1.0 if version == "v1" else 0.0
    a1, p, a2, n = multi_similarity_pairs(torch.cdist(x, x), labels, 0.1)
    pos = indices_to_mask(a1, p, (len(x), len(x)))
    neg = indices_to_mask(a2, n, (len(x), len(x)))

    def eq39(e):
        d = torch.cdist(e, e)
        e_pos = torch.exp(2 * (d.detach() - 1)) * pos
        e_neg = torch.exp(50 * (1 - d.detach())) * neg
        w_pos = e_pos / (one + e_pos.sum(dim=1, keepdim=True)).clamp_min(1e-300)
        w_neg = e_neg / (one + e_neg.sum(dim=1, keepdim=True)).clamp_min(1e-300)
        return ((w_pos * (d - 1)).sum() + (w_neg * (1 - d)).sum()) / len(e)

    ours = MultiSimilarityLoss(lam=1.0, distance="euclidean", version=version)
    _, ours_grad = value_and_grad(lambda e: ours(e, labels), x)
    _, eq39_grad = value_and_grad(eq39, x)
    assert ours_grad.abs().max() > 1e-6
    torch.testing.assert_close(ours_grad, eq39_grad, rtol=1e-9, atol=1e-11)


def test_unknown_version_is_an_input_error():
    with pytest.raises(InputError, match="version must be one of v1, v2"):
        MultiSimilarityLoss(version="v3")
