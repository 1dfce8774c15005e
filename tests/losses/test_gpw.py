"""gpw's pair- and triplet-based weighting losses: hand-computed values and gradients, the paper's special cases,
parity with pytorch-metric-learning where gpw reduces to a loss it has, and a per-anchor loop as a second oracle."""

import math

import pytest
import torch
import torch.nn.functional as F
from pytorch_metric_learning import losses, reducers

from dml_core.errors import InputError
from dml_core.losses import build_loss
from dml_core.losses.gpw import GeneralPairWeightingLoss, GeneralTripletWeightingLoss
from tests.losses.helpers import SEEDS, SQRT2, assert_same_value_and_grad, normalized, random_batch, square

# ---------------------------------------------------------------- reference: one anchor at a time, Python loops


def _weights(gaps: list[torch.Tensor], weighting: str, exponent: float, normalize: bool) -> list[float]:
    raw = []
    for gap in gaps:
        g = float(gap.detach())  # the weight is a number without gradient (footnote 6)
        raw.append(1.0 if weighting == "constant" else g**exponent if weighting == "power" else math.exp(exponent * g))
    total = sum(raw)
    return [w / total for w in raw] if normalize and total > 0 else raw


def loop_pair_loss(x, labels, m1, m2, weighting, pos_exp, neg_exp, normalize, square_distance=False):
    """Algorithm 1 literally: per anchor, mine (Eqs. 16-17), weight, L_i (Eq. 18); L = 1/N sum L_i."""
    total = x.new_zeros(())
    for i in range(len(x)):
        pos_gaps, neg_gaps = [], []
        for j in range(len(x)):
            if j == i:
                continue
            d = (x[i] - x[j]).norm()
            d = d**2 if square_distance else d
            if labels[i] == labels[j] and d >= m1:
                pos_gaps.append(d - m1)
            elif labels[i] != labels[j] and d <= m2:
                neg_gaps.append(m2 - d)
        for gaps, exponent in ((pos_gaps, pos_exp), (neg_gaps, neg_exp)):
            for w, gap in zip(_weights(gaps, weighting, exponent, normalize), gaps, strict=True):
                total = total + w * torch.relu(gap)
    return total / len(x)


def loop_triplet_loss(x, labels, margin, weighting, exponent, normalize, hard=False):
    """Eq. 21 per anchor over the triplets of Eq. 19 (or Eq. 20's hardest one), L = 1/N sum L_i."""
    total = x.new_zeros(())
    n = len(x)
    for i in range(n):
        positives = [j for j in range(n) if j != i and labels[j] == labels[i]]
        negatives = [k for k in range(n) if labels[k] != labels[i]]
        if hard and positives and negatives:
            d = [float((x[i] - x[k]).detach().norm()) for k in range(n)]
            positives = [max(positives, key=lambda j: d[j])]
            negatives = [min(negatives, key=lambda k: d[k])]
        gaps = []
        for j in positives:
            for k in negatives:
                gap = (x[i] - x[j]).norm() - (x[i] - x[k]).norm() + margin
                if gap >= 0:
                    gaps.append(gap)
        for w, gap in zip(_weights(gaps, weighting, exponent, normalize), gaps, strict=True):
            total = total + w * torch.relu(gap)
    return total / n


# ---------------------------------------------------------------- hand-computed values on the square fixture
# square(): every anchor has one positive at sqrt 2 and negatives at 2 and sqrt 2.


def test_pair_square_averaged_and_summed():
    x, labels = square()
    # m2 = 2.5 mines both negatives: hinges 0.5 and 2.5 - sqrt 2.
    averaged = GeneralPairWeightingLoss(neg_margin=2.5)(x, labels)
    assert averaged.item() == pytest.approx(SQRT2 + (3 - SQRT2) / 2, rel=1e-12)
    summed = GeneralPairWeightingLoss(neg_margin=2.5, normalize_weights=False)(x, labels)
    assert summed.item() == pytest.approx(SQRT2 + 3 - SQRT2, rel=1e-12)
    # m2 = 1.5 mines only the sqrt 2 negative.
    assert GeneralPairWeightingLoss(neg_margin=1.5)(x, labels).item() == pytest.approx(1.5, rel=1e-12)


def test_pair_square_power_and_exponential_weights():
    x, labels = square()
    h1, h2 = 0.5, 2.5 - SQRT2  # negative hinges; with q = 1 the weights are the hinges themselves
    power = GeneralPairWeightingLoss(neg_margin=2.5, weighting="power", q=1.0)
    assert power(x, labels).item() == pytest.approx(SQRT2 + (h1**2 + h2**2) / (h1 + h2), rel=1e-12)
    assert power.last_terms["neg"].item() == pytest.approx((h1**2 + h2**2) / (h1 + h2), rel=1e-12)
    e1, e2 = math.exp(2 * h1), math.exp(2 * h2)  # beta = 2 (Pair-E)
    expo = GeneralPairWeightingLoss(neg_margin=2.5, weighting="exponential", beta=2.0)
    assert expo(x, labels).item() == pytest.approx(SQRT2 + (e1 * h1 + e2 * h2) / (e1 + e2), rel=1e-12)
    unnormalised = GeneralPairWeightingLoss(neg_margin=2.5, weighting="exponential", beta=2.0, normalize_weights=False)
    assert unnormalised(x, labels).item() == pytest.approx(SQRT2 + e1 * h1 + e2 * h2, rel=1e-12)


def test_pair_triplet_margin_mining_drops_easy_negatives():
    # Eqs. 22-23, eps = 0.1: a negative is kept when D <= max positive (sqrt 2) + eps: the one at 2 goes.
    x, labels = square()
    loss = GeneralPairWeightingLoss(neg_margin=2.5, epsilon=0.1)
    assert loss(x, labels).item() == pytest.approx(SQRT2 + 2.5 - SQRT2, rel=1e-12)


def test_pair_square_distance_eq36():
    # D^2: positives 2, negatives 4 and 2; m2 = 3 mines the negative at D^2 = 2 (hinge 1).
    x, labels = square()
    loss = GeneralPairWeightingLoss(neg_margin=3.0, distance="squared_euclidean")
    assert loss(x, labels).item() == pytest.approx(2 + 1, rel=1e-12)


def test_pair_positive_threshold_mining():
    # m1 = 1.5 > sqrt 2: no positive is mined; m2 = 1.6 keeps the sqrt 2 negative.
    x, labels = square()
    loss = GeneralPairWeightingLoss(pos_margin=1.5, neg_margin=1.6)
    assert loss(x, labels).item() == pytest.approx(1.6 - SQRT2, rel=1e-12)
    assert loss.last_terms["pos"].item() == 0.0


def test_pair_positives_below_m1_are_not_averaged():
    # One class on a line at 0, 0.2, 1.0; m1 = 0.5. Mined positives (D >= m1) per anchor: {1.0}, {0.8},
    # {1.0, 0.8}; averaged hinges 0.5, 0.3, 0.4. Counting the unmined 0.2 pairs would give 0.25, 0.15, 0.4.
    x = torch.tensor([[0.0], [0.2], [1.0]], dtype=torch.float64)
    loss = GeneralPairWeightingLoss(pos_margin=0.5, neg_margin=0.8)
    assert loss(x, torch.tensor([0, 0, 0])).item() == pytest.approx((0.5 + 0.3 + 0.4) / 3, rel=1e-12)


# ---------------------------------------------------------------- weights carry no gradient


def test_pair_weight_is_detached_hand_gradient():
    # Two points of one class at distance d; power p = 1, v0: each anchor's L_i = w d with w = d (detached),
    # so L = d^2 but dL/dd = d, not 2d.
    d = 0.75
    x = torch.tensor([[0.0, 0.0], [d, 0.0]], dtype=torch.float64, requires_grad=True)
    loss = GeneralPairWeightingLoss(weighting="power", p=1.0, normalize_weights=False)(x, torch.tensor([0, 0]))
    loss.backward()
    assert loss.item() == pytest.approx(d**2)
    torch.testing.assert_close(x.grad, torch.tensor([[-d, 0.0], [d, 0.0]], dtype=torch.float64))


def test_triplet_weight_is_detached_hand_gradient():
    # 1-D points a = 0, b = 0.5 (class 0), c = 0.7 (class 1), m = 0.1. Only anchor b has a violating triplet:
    # (b, a, c) with gap 0.5 - 0.2 + 0.1 = 0.4 (anchor a: 0.5 - 0.7 + 0.1 < 0). Power p = 1, v0: w = 0.4.
    x = torch.tensor([[0.0], [0.5], [0.7]], dtype=torch.float64, requires_grad=True)
    labels = torch.tensor([0, 0, 1])
    loss = GeneralTripletWeightingLoss(weighting="power", p=1.0, normalize_weights=False)(x, labels)
    loss.backward()
    assert loss.item() == pytest.approx(0.4 * 0.4 / 3)
    expected = torch.tensor([[-0.4 / 3], [0.8 / 3], [-0.4 / 3]], dtype=torch.float64)
    torch.testing.assert_close(x.grad, expected)


# ---------------------------------------------------------------- the paper's special cases


@pytest.mark.parametrize("seed", SEEDS)
def test_zero_exponents_are_the_constant_weight(seed):
    # p = q = 0 (Sec. III-B2) and alpha = beta = 0 (Sec. III-B3) both give w = 1.
    x, labels = random_batch(seed)
    constant = GeneralPairWeightingLoss(neg_margin=1.2)
    for other in (
        GeneralPairWeightingLoss(neg_margin=1.2, weighting="power"),
        GeneralPairWeightingLoss(neg_margin=1.2, weighting="exponential"),
    ):
        assert_same_value_and_grad(normalized(other, labels), normalized(constant, labels), x)


@pytest.mark.parametrize("seed", SEEDS)
def test_normalised_constant_weight_is_the_averaged_thresholded_contrastive_loss(seed):
    # gpw with p = q = 0 and weight normalisation over the batch = contrastive loss (m1 = 0, m2) averaged over
    # its non-zero terms: pytorch-metric-learning's ContrastiveLoss with its default AvgNonZeroReducer.
    x, labels = random_batch(seed)
    ours = GeneralPairWeightingLoss(neg_margin=1.2, weighting="power", normalization_scope="batch")
    theirs = losses.ContrastiveLoss(pos_margin=0.0, neg_margin=1.2)
    assert_same_value_and_grad(normalized(ours, labels), normalized(theirs, labels), x)


@pytest.mark.parametrize("seed", SEEDS)
def test_v0_constant_weight_is_the_summed_contrastive_loss_over_n(seed):
    x, labels = random_batch(seed)
    ours = GeneralPairWeightingLoss(neg_margin=1.2, normalize_weights=False)
    theirs = losses.ContrastiveLoss(pos_margin=0.0, neg_margin=1.2, reducer=reducers.SumReducer())
    assert_same_value_and_grad(normalized(ours, labels), lambda e: theirs(F.normalize(e, dim=1), labels) / len(e), x)


@pytest.mark.parametrize("seed", SEEDS)
def test_normalised_constant_triplet_is_the_averaged_triplet_margin_loss(seed):
    x, labels = random_batch(seed)
    ours = GeneralTripletWeightingLoss(margin=0.1, normalization_scope="batch")
    theirs = losses.TripletMarginLoss(margin=0.1)
    assert_same_value_and_grad(normalized(ours, labels), normalized(theirs, labels), x)


@pytest.mark.parametrize("seed", SEEDS)
def test_exponential_normalised_pair_loss_is_eq38_softmax_weighting(seed):
    # Eq. 38: w+ = softmax over mined positives of alpha (D - m1), w- = softmax over mined negatives of
    # beta (m2 - D), per anchor; alpha, beta = 2, 50 (the Fig. 5 setting).
    x, labels = random_batch(seed)
    x = F.normalize(x, dim=1)
    d = torch.cdist(x, x)
    same = labels[:, None] == labels[None, :]
    pos = same & ~torch.eye(len(x), dtype=torch.bool)
    neg = ~same & (d <= 1.0)
    w_pos = torch.softmax((2 * d).masked_fill(~pos, float("-inf")), dim=1).nan_to_num(0.0)
    w_neg = torch.softmax((50 * (1 - d)).masked_fill(~neg, float("-inf")), dim=1).nan_to_num(0.0)
    expected = ((w_pos * d).sum() + (w_neg * (1 - d)).sum()) / len(x)
    loss = GeneralPairWeightingLoss(neg_margin=1.0, weighting="exponential", alpha=2.0, beta=50.0)
    assert loss(x, labels).item() == pytest.approx(expected.item(), rel=1e-10)


# ---------------------------------------------------------------- vectorised loss == per-anchor loop


PAIR_SETTINGS = [
    ("constant", 0.0, 0.0, False),
    ("power", 0.0, 1.0, True),  # Pair-P, CUB
    ("power", 1.0, 5.0, True),  # Pair-P, SOP
    ("power", 0.5, 0.5, True),
    ("exponential", 0.0, 2.0, True),  # Pair-E, CUB
    ("exponential", 2.0, 10.0, True),  # Pair-E, SOP
    ("exponential", 0.0, 1.0, False),  # v0
]


@pytest.mark.parametrize("seed", SEEDS)
@pytest.mark.parametrize(("weighting", "pos_exp", "neg_exp", "normalize"), PAIR_SETTINGS)
def test_pair_loss_matches_the_per_anchor_loop(seed, weighting, pos_exp, neg_exp, normalize):
    x, labels = random_batch(seed)
    key = ("alpha", "beta") if weighting == "exponential" else ("p", "q")
    params = {} if weighting == "constant" else {key[0]: pos_exp, key[1]: neg_exp}
    ours = GeneralPairWeightingLoss(
        pos_margin=0.3, neg_margin=1.2, weighting=weighting, normalize_weights=normalize, **params
    )

    def reference(e):
        return loop_pair_loss(F.normalize(e, dim=1), labels, 0.3, 1.2, weighting, pos_exp, neg_exp, normalize)

    assert_same_value_and_grad(normalized(ours, labels), reference, x)


@pytest.mark.parametrize("seed", SEEDS)
def test_pair_square_distance_matches_the_loop(seed):
    x, labels = random_batch(seed)
    ours = GeneralPairWeightingLoss(neg_margin=1.5, distance="squared_euclidean")

    def reference(e):
        return loop_pair_loss(F.normalize(e, dim=1), labels, 0.0, 1.5, "constant", 0, 0, True, square_distance=True)

    assert_same_value_and_grad(normalized(ours, labels), reference, x)


TRIPLET_SETTINGS = [
    ("constant", 0.0, False),
    ("power", 5.0, True),  # Triplet-P
    ("power", 1.0, False),
    ("exponential", 40.0, True),  # Triplet-E
    ("exponential", 1.0, False),
]


@pytest.mark.parametrize("seed", SEEDS)
@pytest.mark.parametrize(("weighting", "exponent", "normalize"), TRIPLET_SETTINGS)
@pytest.mark.parametrize("mining", ["margin", "hard"])
def test_triplet_loss_matches_the_per_anchor_loop(seed, weighting, exponent, normalize, mining):
    x, labels = random_batch(seed)
    params = {} if weighting == "constant" else {"alpha" if weighting == "exponential" else "p": exponent}
    ours = GeneralTripletWeightingLoss(
        margin=0.2, weighting=weighting, normalize_weights=normalize, mining=mining, **params
    )

    def reference(e):
        return loop_triplet_loss(F.normalize(e, dim=1), labels, 0.2, weighting, exponent, normalize, mining == "hard")

    assert_same_value_and_grad(normalized(ours, labels), reference, x)


def test_batch_scope_differs_from_anchor_scope_when_anchors_differ():
    # Anchor scope averages per anchor then over anchors; batch scope averages over all mined pairs.
    x, labels = random_batch(0)
    x = F.normalize(x, dim=1)
    anchor = GeneralPairWeightingLoss(neg_margin=1.0)(x, labels)
    batch = GeneralPairWeightingLoss(neg_margin=1.0, normalization_scope="batch")(x, labels)
    assert not torch.isclose(anchor, batch)


# ---------------------------------------------------------------- robustness and errors


def test_large_exponential_weights_stay_finite_in_float32():
    # Triplet-E (alpha = 40) and Fig. 5 (beta = 50): exp would overflow float32 without the softmax shift.
    gen = torch.Generator().manual_seed(0)
    x = F.normalize(torch.randn(20, 8, generator=gen), dim=1).requires_grad_(True)
    labels = torch.arange(4).repeat_interleave(5)
    for loss in (
        GeneralTripletWeightingLoss(margin=2.0, weighting="exponential", alpha=60.0),
        GeneralPairWeightingLoss(neg_margin=2.0, weighting="exponential", alpha=50.0, beta=50.0),
    ):
        value = loss(x, labels)
        (grad,) = torch.autograd.grad(value, x)
        assert torch.isfinite(value) and torch.isfinite(grad).all() and value > 0


def test_no_mined_terms_give_zero_with_a_graph():
    x = torch.tensor([[1.0, 0.0], [-1.0, 0.0]], requires_grad=True)
    labels = torch.tensor([0, 1])  # one negative pair at distance 2 > m2; no positive pair, no triplet
    for loss in (GeneralPairWeightingLoss(), GeneralTripletWeightingLoss(), GeneralPairWeightingLoss(epsilon=0.1)):
        value = loss(x, labels)
        value.backward()
        assert value.item() == 0.0 and torch.isfinite(x.grad).all()


def test_registry_builds_both():
    assert isinstance(build_loss("gpw_pair", weighting="power", q=1.0), GeneralPairWeightingLoss)
    assert isinstance(build_loss("gpw_triplet", weighting="exponential", alpha=40.0), GeneralTripletWeightingLoss)


@pytest.mark.parametrize(
    ("build", "message"),
    [
        (lambda: GeneralPairWeightingLoss(weighting="cubic"), "weighting must be one of constant, power"),
        (lambda: GeneralPairWeightingLoss(weighting="power", alpha=2.0), "alpha=2.0 applies only to weighting"),
        (lambda: GeneralPairWeightingLoss(weighting="power", q=-1.0), "q must be >= 0"),
        (lambda: GeneralPairWeightingLoss(pos_margin=0.9, neg_margin=0.8), "pos_margin \\(m1\\) <= neg_margin"),
        (lambda: GeneralPairWeightingLoss(distance="cosine"), "distance must be one of euclidean"),
        (lambda: GeneralPairWeightingLoss(normalization_scope="class"), "normalization_scope must be one of"),
        (lambda: GeneralTripletWeightingLoss(mining="semihard"), "mining must be one of margin, hard"),
        (lambda: GeneralTripletWeightingLoss(margin=-0.1), "margin must be >= 0"),
        (lambda: GeneralTripletWeightingLoss(p=5.0), "p=5.0 applies only to weighting 'power'"),
    ],
)
def test_bad_options_are_input_errors(build, message):
    with pytest.raises(InputError, match=message):
        build()
