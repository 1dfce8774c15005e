import math

import pytest
import torch
from pytorch_metric_learning import distances, losses

from dml_core.errors import InputError
from dml_core.losses.contrastive import ContrastiveLoss
from tests.losses.helpers import SEEDS, SQRT2, assert_same_value_and_grad, normalized, random_batch, square


def test_square_hand_computed():
    x, labels = square()
    # Positives at sqrt 2 -> sqrt 2 each; negatives: [1 - d]_+ = 0 for d in {2, sqrt 2}.
    assert ContrastiveLoss()(x, labels).item() == pytest.approx(SQRT2)
    # neg_margin 2.5: negatives give 0.5 (d = 2) and 2.5 - sqrt 2; their non-zero mean is (3 - sqrt 2) / 2.
    loss = ContrastiveLoss(neg_margin=2.5)
    assert loss(x, labels).item() == pytest.approx(1.5 + SQRT2 / 2)
    assert loss.last_terms["neg"].item() == pytest.approx((3 - SQRT2) / 2)
    # Hadsell's squared hinge: positives d^2 = 2; negatives 0.5^2 and (2.5 - sqrt 2)^2.
    hadsell = ContrastiveLoss(neg_margin=2.5, power=2)(x, labels).item()
    assert hadsell == pytest.approx(2 + (0.25 + (2.5 - SQRT2) ** 2) / 2)


def test_mean_reduction_counts_zero_terms():
    x, labels = square()
    # neg_margin 1.5: only the sqrt 2 negatives violate (1.5 - sqrt 2); "mean" averages over all 8 negatives.
    loss = ContrastiveLoss(neg_margin=1.5, reduction="mean")(x, labels).item()
    assert loss == pytest.approx(SQRT2 + (1.5 - SQRT2) / 2)


@pytest.mark.parametrize("seed", SEEDS)
def test_parity_euclidean(seed):
    x, labels = random_batch(seed)
    theirs = losses.ContrastiveLoss(
        pos_margin=0.3, neg_margin=1.1, distance=distances.LpDistance(normalize_embeddings=False)
    )
    ours = ContrastiveLoss(pos_margin=0.3, neg_margin=1.1)
    assert_same_value_and_grad(normalized(ours, labels), normalized(theirs, labels), x)


@pytest.mark.parametrize("seed", SEEDS)
def test_parity_cosine(seed):
    x, labels = random_batch(seed)
    theirs = losses.ContrastiveLoss(pos_margin=0.9, neg_margin=0.1, distance=distances.CosineSimilarity())
    ours = ContrastiveLoss(pos_margin=0.9, neg_margin=0.1, distance="cosine")
    assert_same_value_and_grad(lambda e: ours(e, labels), lambda e: theirs(e, labels), x)


def test_bad_arguments_are_input_errors():
    with pytest.raises(InputError, match="distance must be one of"):
        ContrastiveLoss(distance="manhattan")
    with pytest.raises(InputError, match="labels must be a 1-D integer tensor of length 3"):
        ContrastiveLoss()(torch.zeros(3, 2), torch.zeros(4, dtype=torch.long))
    assert math.isfinite(ContrastiveLoss()(torch.zeros(3, 2), torch.tensor([0, 1, 2])).item())
