import math

import pytest
import torch
from pytorch_metric_learning import distances, losses

from dml_core.losses import LiftedStructureLoss
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
    theirs = losses.LiftedStructureLoss(
        neg_margin=1.0, distance=distances.LpDistance(normalize_embeddings=False)
    )
    assert_same_value_and_grad(normalized(LiftedStructureLoss(), labels), normalized(theirs, labels), x)
