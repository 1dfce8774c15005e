import pytest
import torch
from pytorch_metric_learning import distances, losses

from dml_core.losses.margin import MarginLoss
from dml_core.losses.mining import distance_weighted_triplets
from tests.losses.helpers import SEEDS, SQRT2, assert_same_value_and_grad, normalized, random_batch, square


def test_square_hand_computed():
    x, labels = square()
    # All 8 triplets, beta 1.5, margin 0.2. Positive term per triplet: sqrt 2 - 1.5 + 0.2 (x8);
    # negative terms: 1.5 - sqrt 2 + 0.2 (x4, d = sqrt 2) and 1.5 - 2 + 0.2 < 0 (x4). 12 non-zero terms.
    loss = MarginLoss(beta=1.5, sampling="all")
    expected = (8 * (SQRT2 - 1.3) + 4 * (1.7 - SQRT2)) / 12
    assert loss(x, labels).item() == pytest.approx(expected)
    assert loss.last_terms["pos"].item() == pytest.approx(8 * (SQRT2 - 1.3) / 12)


def test_learned_beta_gets_gradient_and_regulariser():
    x, labels = square()
    loss = MarginLoss(beta=1.5, nu=0.1, learn_beta=True, sampling="all")
    value = loss(x, labels)
    assert loss.last_terms["beta_reg"].item() == pytest.approx(0.15)
    value.backward()
    # d/d beta: -8/12 (positives) + 4/12 (negatives) + nu
    assert loss.beta.grad.item() == pytest.approx(-8 / 12 + 4 / 12 + 0.1)
    assert [p is loss.beta for p in loss.parameters()] == [True]


def test_distance_weighted_sampling_is_seeded():
    x, labels = random_batch(0, classes=4, per_class=4, dim=8)
    x = torch.nn.functional.normalize(x, dim=1)
    first, second = MarginLoss(seed=3), MarginLoss(seed=3)
    assert first(x, labels).item() == second(x, labels).item()


@pytest.mark.parametrize("seed", SEEDS)
def test_parity_all_triplets(seed):
    x, labels = random_batch(seed)
    theirs = losses.MarginLoss(margin=0.2, beta=1.0, distance=distances.LpDistance(normalize_embeddings=False))
    ours = MarginLoss(beta=1.0, sampling="all")
    assert_same_value_and_grad(normalized(ours, labels), normalized(theirs, labels), x)


@pytest.mark.parametrize("seed", SEEDS)
def test_parity_on_distance_weighted_triplets(seed):
    x, labels = random_batch(seed, classes=4, per_class=4, dim=8)
    unit = torch.nn.functional.normalize(x, dim=1)
    # The same triplets for both: ours samples with a generator seeded 0, and so does this call.
    generator = torch.Generator().manual_seed(0)
    triplets = distance_weighted_triplets(torch.cdist(unit, unit), labels, 8, generator=generator)
    theirs_loss = losses.MarginLoss(margin=0.2, beta=1.0, distance=distances.LpDistance(normalize_embeddings=False))
    ours = MarginLoss(beta=1.0, seed=0)
    assert_same_value_and_grad(
        normalized(ours, labels),
        lambda e: theirs_loss(torch.nn.functional.normalize(e, dim=1), labels, triplets),
        x,
    )


def test_parity_learned_beta_per_class():
    x, labels = random_batch(1)
    theirs = losses.MarginLoss(
        beta=1.0,
        nu=0.2,
        learn_beta=True,
        num_classes=4,
        distance=distances.LpDistance(normalize_embeddings=False),
    )
    ours = MarginLoss(beta=1.0, nu=0.2, learn_beta=True, num_classes=4, sampling="all")
    unit = torch.nn.functional.normalize(x, dim=1)
    torch.testing.assert_close(ours(unit, labels), theirs(unit, labels).to(torch.float64), rtol=1e-6, atol=1e-8)
