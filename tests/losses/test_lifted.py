import math

import pytest
import torch
from pytorch_metric_learning import distances, losses

from dml_core.losses.lifted import GeneralizedLiftedLoss, LiftedStructureLoss
from tests.losses.helpers import SEEDS, SQRT2, assert_same_value_and_grad, normalized, random_batch, square


def test_square_hand_computed():
    x, labels = square()
    # Every point has negatives at 2 and sqrt 2: J = log(2 (e^(1-2) + e^(1-sqrt 2))) + sqrt 2 for each
    # positive pair; L = 1/(2|P|) sum J^2 over the 2 unordered pairs = J^2 / 2.
    j = math.log(2 * (math.exp(-1) + math.exp(1 - SQRT2))) + SQRT2
    assert LiftedStructureLoss()(x, labels).item() == pytest.approx(j**2 / 2)


def test_uses_the_negatives_of_both_ends_of_a_pair():
    # Three collinear points: A=0, B=1 (class 0), C=3 (class 1). Negatives: A-C at 3, B-C at 2.
    x = torch.tensor([[0.0], [1.0], [3.0]], dtype=torch.float64)
    labels = torch.tensor([0, 0, 1])
    j = math.log(math.exp(1 - 3) + math.exp(1 - 2)) + 1.0  # one positive pair (A, B)
    assert LiftedStructureLoss()(x, labels).item() == pytest.approx(max(j, 0) ** 2 / 2)


def test_one_class_batch_has_no_loss():
    x = torch.randn(4, 3, dtype=torch.float64, requires_grad=True)
    loss = LiftedStructureLoss()(x, torch.zeros(4, dtype=torch.long))
    loss.backward()
    assert loss.item() == 0.0 and torch.isfinite(x.grad).all()


@pytest.mark.parametrize("seed", SEEDS)
def test_parity_with_pml_lifted_structure(seed):
    x, labels = random_batch(seed)
    theirs = losses.LiftedStructureLoss(neg_margin=1.0, distance=distances.LpDistance(normalize_embeddings=False))
    assert_same_value_and_grad(normalized(LiftedStructureLoss(), labels), normalized(theirs, labels), x)


def test_generalized_square_hand_computed():
    x, labels = square()
    # Cosine: each anchor has one positive (S = 0) and negatives at S = -1 and 0.
    # Eq. 23: log e^0 + log(e^-1 + e^0) + m.
    expected = math.log(math.exp(-1) + 1) + 0.5
    assert GeneralizedLiftedLoss(margin=0.5)(x, labels).item() == pytest.approx(expected)
    # Eq. 25 with g1 = 2, g2 = 3, l1 = 0.5, l2 = 0.2:
    # 1/2 log(e^(-2*0.5) + e^0) + 1/3 log(e^(3*0.2) + e^(-3) + e^0) + m
    improved = GeneralizedLiftedLoss(margin=0.5, pos_scale=2, neg_scale=3, pos_anchor=0.5, neg_anchor=0.2)
    expected = math.log(math.exp(-1) + 1) / 2 + math.log(math.exp(0.6) + math.exp(-3) + 1) / 3 + 0.5
    assert improved(x, labels).item() == pytest.approx(expected)
    # Euclidean: soft max of positive D (sqrt 2) and soft -min of negative D (2, sqrt 2).
    euclid = GeneralizedLiftedLoss(margin=1.0, distance="euclidean")(x, labels).item()
    assert euclid == pytest.approx(max(0.0, SQRT2 + math.log(math.exp(-2) + math.exp(-SQRT2)) + 1.0))


@pytest.mark.parametrize("seed", SEEDS)
def test_generalized_parity_with_pml(seed):
    x, labels = random_batch(seed)
    # PML: relu(log sum exp(pos_margin - S_p) + log sum exp(S_n - neg_margin)): Eq. 23 with neg_margin -m.
    theirs = losses.GeneralizedLiftedStructureLoss(
        neg_margin=-0.3, pos_margin=0.0, distance=distances.CosineSimilarity()
    )
    ours = GeneralizedLiftedLoss(margin=0.3)
    assert_same_value_and_grad(lambda e: ours(e, labels), lambda e: theirs(e, labels), x)
    theirs_d = losses.GeneralizedLiftedStructureLoss(
        neg_margin=1.0, pos_margin=0.0, distance=distances.LpDistance(normalize_embeddings=False)
    )
    ours_d = GeneralizedLiftedLoss(margin=1.0, distance="euclidean")
    assert_same_value_and_grad(normalized(ours_d, labels), normalized(theirs_d, labels), x)
