import itertools
import math

import numpy as np
import pytest
import torch
import torch.nn.functional as F

from dml_core.errors import InputError
from dml_core.losses.anml import DANMLLoss, ImprovedProxyNCALoss, danml_distance, log_exp_mean
from dml_core.losses.base import indices_to_mask
from dml_core.losses.lifted import GeneralizedLiftedLoss
from dml_core.losses.mining import multi_similarity_pairs
from dml_core.losses.multi_similarity import MultiSimilarityLoss
from dml_core.losses.proxy_nca import ProxyNCALoss
from tests.losses.helpers import SEEDS, SQRT2, assert_same_value_and_grad, normalized, random_batch, square


def _softplus(x: float) -> float:
    return math.log1p(math.exp(x))


# --- the log-exp mean (Eq. 12) and Lemmas 1-2 / Theorem 3 -------------------------------------------------


def _row(*values: float) -> tuple[torch.Tensor, torch.Tensor]:
    v = torch.tensor([values], dtype=torch.float64)
    return v, torch.ones_like(v, dtype=torch.bool)


def test_log_exp_mean_hand_computed():
    v, mask = _row(0.0, 1.0)
    # -1/2 log((e^0 + e^-2) / 2); with lambda = 3 and gamma = -1: log((e^0 + e^1 + e^3) / 3).
    assert log_exp_mean(v, mask, 2.0).item() == pytest.approx(-0.5 * math.log((1 + math.exp(-2)) / 2))
    expected = math.log((1 + math.e + math.exp(3)) / 3)
    assert log_exp_mean(v, mask, -1.0, anchor=3.0).item() == pytest.approx(expected)


@pytest.mark.parametrize("anchor", [None, 0.7])
def test_lemma1_limits(anchor):
    v, mask = _row(0.2, 0.5, 0.9, 1.4)
    members = [0.2, 0.5, 0.9, 1.4] + ([] if anchor is None else [anchor])
    mean = sum(members) / len(members)
    assert log_exp_mean(v, mask, 0.0, anchor).item() == pytest.approx(mean, abs=1e-12)
    assert log_exp_mean(v, mask, 1e-7, anchor).item() == pytest.approx(mean, abs=1e-6)
    assert log_exp_mean(v, mask, -1e-7, anchor).item() == pytest.approx(mean, abs=1e-6)
    assert log_exp_mean(v, mask, 1e5, anchor).item() == pytest.approx(min(members), abs=1e-4)
    assert log_exp_mean(v, mask, -1e5, anchor).item() == pytest.approx(max(members), abs=1e-4)


def test_lemma2_decreasing_in_gamma():
    v, mask = _row(0.1, 0.3, 0.35, 1.2, 1.9)
    gammas = np.linspace(-30, 30, 61)
    values = [log_exp_mean(v, mask, float(g)).item() for g in gammas]
    assert all(a > b for a, b in itertools.pairwise(values))


@pytest.mark.parametrize("k", [2, 3, 4])
def test_theorem3_a_gamma_for_every_k(k):
    # b(gamma*) = mean of the K smallest for one gamma* > 0, and of the K largest for one gamma* < 0; bisection
    # finds each because b is monotone (Lemma 2), so |gamma| encodes K. K = 1 and K = n are the limits
    # gamma -> +-inf and gamma = 0 (Lemma 1), so the finite, signed gamma* exists for 1 < K < n.
    a = [0.1, 0.3, 0.35, 1.2, 1.9]
    v, mask = _row(*a)

    def solve(target: float, lo: float, hi: float) -> float:
        for _ in range(200):
            mid = (lo + hi) / 2
            lo, hi = (mid, hi) if log_exp_mean(v, mask, mid).item() > target else (lo, mid)
        return (lo + hi) / 2

    smallest, largest = sum(a[:k]) / k, sum(a[-k:]) / k
    g_small, g_large = solve(smallest, 1e-9, 1e4), solve(largest, -1e4, -1e-9)
    assert g_small > 0 > g_large
    assert log_exp_mean(v, mask, g_small).item() == pytest.approx(smallest, abs=1e-9)
    assert log_exp_mean(v, mask, g_large).item() == pytest.approx(largest, abs=1e-9)


def test_log_exp_mean_respects_the_mask():
    v = torch.tensor([[0.5, 100.0, 1.5]], dtype=torch.float64)
    mask = torch.tensor([[True, False, True]])
    assert log_exp_mean(v, mask, 0.0).item() == pytest.approx(1.0)
    assert log_exp_mean(v, mask, -1e5).item() == pytest.approx(1.5, abs=1e-4)


# --- DANML (Eq. 22) ------------------------------------------------------------------------------------------


def test_distances():
    x, _ = square()
    assert danml_distance(x, "one_minus_cosine")[0].tolist() == pytest.approx([0.0, 1.0, 2.0, 1.0])
    assert danml_distance(x, "negative_cosine")[0].tolist() == pytest.approx([-1.0, 0.0, 1.0, 0.0])
    assert danml_distance(x, "euclidean")[0].tolist() == pytest.approx([0.0, SQRT2, 2.0, SQRT2])
    assert danml_distance(x, "squared_euclidean")[0].tolist() == pytest.approx([0.0, 2.0, 4.0, 2.0])


def test_square_hand_computed():
    x, labels = square()
    # d = 1 - cos: every anchor has one positive at d = 1 and negatives at d = 2 and d = 1.
    # P = -1/g1 log((e^(-g1 l1) + e^(-g1)) / 2), N = -1/g2 log((e^(-g2 l2) + e^(-2 g2) + e^(-g2)) / 3).
    g1, g2, l1, l2 = -2.0, 3.0, 0.5, 0.6
    p = -math.log((math.exp(-g1 * l1) + math.exp(-g1)) / 2) / g1
    n = -math.log((math.exp(-g2 * l2) + math.exp(-2 * g2) + math.exp(-g2)) / 3) / g2
    loss = DANMLLoss(gamma1=g1, gamma2=g2, lambda1=l1, lambda2=l2, epsilon=None)
    assert loss(x, labels).item() == pytest.approx(_softplus(p - n))
    assert loss.last_terms["pos_radius"].item() == pytest.approx(p)
    assert loss.last_terms["neg_radius"].item() == pytest.approx(n)
    # Without anchors (Table 3 "Original"): P = d of the one positive, N = -1/g2 log((e^(-2 g2) + e^(-g2)) / 2).
    plain = DANMLLoss(gamma1=g1, gamma2=g2, lambda1=None, lambda2=None, epsilon=None)
    n_plain = -math.log((math.exp(-2 * g2) + math.exp(-g2)) / 2) / g2
    assert plain(x, labels).item() == pytest.approx(_softplus(1.0 - n_plain))


def test_collinear_hand_computed_with_mining():
    # 1-D points, Euclidean: A=0, B=1, C=0.5 (class 0), E=2.5, F=5 (class 1).
    x = torch.tensor([[0.0], [1.0], [0.5], [2.5], [5.0]], dtype=torch.float64)
    labels = torch.tensor([0, 0, 0, 1, 1])
    loss = DANMLLoss(gamma1=-1.0, gamma2=2.0, lambda1=None, lambda2=None, distance="euclidean", epsilon=0.1)
    # MS mining (dissimilarity, eps 0.1) keeps: positives j of i with d_ij + 0.1 > min neg d_i;
    # negatives l with d_il - 0.1 < max pos d_i.
    # A: pos {1, 0.5}, neg {2.5, 5}: no positive beyond 2.4, no negative below 1.1 -> unused.
    # B: pos {1, 0.5}, neg {1.5, 4}: positives kept none (1.1 < 1.5, 0.6 < 1.5) -> unused.
    # C: pos {0.5, 0.5}, neg {2, 4.5}: none -> unused.
    # E: pos {2.5}, neg {2.5, 1.5, 2}: pos kept (2.6 > 1.5); neg kept all (< 2.6): used.
    # F: pos {2.5}, neg {5, 4, 4.5}: pos kept none (2.6 < 4) -> unused.
    p = 2.5
    n = -math.log((math.exp(-2 * 2.5) + math.exp(-2 * 1.5) + math.exp(-2 * 2.0)) / 3) / 2
    assert loss(x, labels).item() == pytest.approx(_softplus(p - n))


def test_anchor_terms_enter_the_radii_as_lambda_members():
    # Sec. 6.1: with g1 -> -inf the similar radius is max(lambda1, largest positive distance).
    x, labels = square()  # positives at d = 1 (1 - cos)
    far = DANMLLoss(gamma1=-1e5, gamma2=1e5, lambda1=1.5, lambda2=0.2, link="identity", epsilon=None)
    far(x, labels)
    assert far.last_terms["pos_radius"].item() == pytest.approx(1.5, abs=1e-4)
    assert far.last_terms["neg_radius"].item() == pytest.approx(0.2, abs=1e-4)
    near = DANMLLoss(gamma1=-1e5, gamma2=1e5, lambda1=0.5, lambda2=1.8, link="identity", epsilon=None)
    near(x, labels)
    assert near.last_terms["pos_radius"].item() == pytest.approx(1.0, abs=1e-4)
    assert near.last_terms["neg_radius"].item() == pytest.approx(1.0, abs=1e-4)


def _ms_set_sizes(x: torch.Tensor, labels: torch.Tensor, epsilon: float) -> tuple[torch.Tensor, torch.Tensor]:
    dissim = -F.normalize(x, dim=1) @ F.normalize(x, dim=1).T
    a1, p, a2, n = multi_similarity_pairs(dissim, labels, epsilon)
    return indices_to_mask(a1, p, dissim.shape).sum(1), indices_to_mask(a2, n, dissim.shape).sum(1)


@pytest.mark.parametrize("seed", SEEDS)
@pytest.mark.parametrize(
    "distance, threshold", [("one_minus_cosine", lambda m: 1 - m), ("negative_cosine", lambda m: -m)]
)
def test_proposition7_multi_similarity_is_a_special_case(seed, distance, threshold):
    # Prop. 7: l(x) = x, lambda1 = lambda2 = m (and g1 = -alpha, g2 = beta) gives the MS loss in the form of
    # Eq. 27, which is MS (Eq. 26) minus 1/alpha log(|P_i|+1) + 1/beta log(|N_i|+1): constant in theta.
    x, labels = random_batch(seed, classes=4, per_class=4, dim=6)
    alpha, beta, m, eps = 2.0, 10.0, 0.5, 0.1
    danml = DANMLLoss(gamma1=-alpha, gamma2=beta, lambda1=m, lambda2=m, distance=distance, link="identity", epsilon=eps)
    ms = MultiSimilarityLoss(alpha=alpha, beta=beta, lam=threshold(m), epsilon=eps)
    pos_count, neg_count = _ms_set_sizes(x, labels, eps)
    assert (pos_count > 0).any() and (neg_count > 0).any(), "degenerate test: nothing mined"
    constant = (torch.log1p(pos_count.double()) / alpha + torch.log1p(neg_count.double()) / beta).mean()
    assert_same_value_and_grad(lambda e: danml(e, labels), lambda e: ms(e, labels) - constant, x)


@pytest.mark.parametrize("seed", SEEDS)
def test_generalized_lifted_eq23_is_a_special_case(seed):
    # g1 = -1, g2 = 1, no anchors, hinge, S = cos (d = -cos): P - N = Eq. 23's log-sum-exps - log|S| - log|D|.
    # In a balanced batch the counts are the same for every anchor (2 positives, 9 negatives).
    x, labels = random_batch(seed, classes=4, per_class=3)
    m = 0.4
    danml = DANMLLoss(
        gamma1=-1.0,
        gamma2=1.0,
        lambda1=None,
        lambda2=None,
        distance="negative_cosine",
        link="hinge",
        margin=m + math.log(2) + math.log(9),
        epsilon=None,
    )
    lifted = GeneralizedLiftedLoss(margin=m)
    assert_same_value_and_grad(lambda e: danml(e, labels), lambda e: lifted(e, labels), x)


@pytest.mark.parametrize("seed", SEEDS)
def test_proposition6_hardest_triplet_limit(seed):
    # g1 -> -inf, g2 -> +inf (distance form), hinge with margin m: batch-hard triplet per anchor, averaged.
    x, labels = random_batch(seed)
    m = 0.2
    loss = DANMLLoss(
        gamma1=-1e5, gamma2=1e5, lambda1=None, lambda2=None, distance="euclidean", link="hinge", margin=m, epsilon=None
    )
    e = F.normalize(x, dim=1)
    d = torch.cdist(e, e)
    same = labels[:, None] == labels[None, :]
    eye = torch.eye(len(labels), dtype=torch.bool)
    hardest_pos = d.masked_fill(~same | eye, -1).amax(1)
    hardest_neg = d.masked_fill(same, 9).amin(1)
    expected = torch.relu(hardest_pos - hardest_neg + m).mean()
    assert expected > 0
    assert loss(e, labels).item() == pytest.approx(expected.item(), abs=1e-4)


def test_gamma_zero_uses_arithmetic_means():
    x, labels = square()
    # 1 - cos: P = mean{l1, 1} = 0.75, N = mean{l2, 2, 1} = 1.2; logistic of -0.45.
    loss = DANMLLoss(gamma1=0.0, gamma2=0.0, lambda1=0.5, lambda2=0.6, epsilon=None)
    assert loss(x, labels).item() == pytest.approx(_softplus(0.75 - 1.2))


def test_gradcheck_float64():
    x, labels = random_batch(0, classes=3, per_class=3, dim=4)
    loss = DANMLLoss(gamma1=-2.0, gamma2=5.0, lambda1=0.5, lambda2=0.55, epsilon=None)
    assert torch.autograd.gradcheck(lambda e: loss(e, labels), (x.requires_grad_(True),))


def test_gradient_direction_pulls_positives_and_pushes_negatives():
    x, labels = square()
    x = x.requires_grad_(True)
    DANMLLoss(epsilon=None)(x, labels).backward()
    # One step of descent brings A closer to its positive B and farther from its near negative D.
    moved = F.normalize(x.detach() - 0.1 * x.grad, dim=1)
    before, after = danml_distance(x.detach(), "one_minus_cosine"), danml_distance(moved, "one_minus_cosine")
    assert after[0, 1] < before[0, 1] and after[0, 3] > before[0, 3]


def test_one_class_batch_without_anchors_has_no_loss():
    x = torch.randn(4, 3, dtype=torch.float64, requires_grad=True)
    loss = DANMLLoss(lambda1=None, lambda2=None)(x, torch.zeros(4, dtype=torch.long))
    loss.backward()
    assert loss.item() == 0.0 and torch.isfinite(x.grad).all()


def test_float32_large_gammas_stay_finite():
    x, labels = random_batch(1, classes=8, per_class=5, dim=16)
    e = F.normalize(x.float(), dim=1).requires_grad_(True)
    value = DANMLLoss(gamma1=-3.0, gamma2=35.0, lambda1=0.65, lambda2=0.68)(e, labels)
    value.backward()
    assert torch.isfinite(value) and torch.isfinite(e.grad).all()


def test_bad_choices_name_the_field():
    with pytest.raises(InputError, match="danml: distance must be one of"):
        DANMLLoss(distance="cosine")
    with pytest.raises(InputError, match="danml: link must be one of logistic, identity, hinge"):
        DANMLLoss(link="softplus")


# --- improved Proxy-NCA (our construction, after Eq. 31) ----------------------------------------------------


def _proxy_pair(gamma: float, lam: float, exclude_positive: bool) -> tuple[ImprovedProxyNCALoss, ProxyNCALoss]:
    torch.manual_seed(0)
    improved = ImprovedProxyNCALoss(4, 5, gamma=gamma, lam=lam, exclude_positive=exclude_positive).double()
    original = ProxyNCALoss(4, 5, exclude_positive=exclude_positive).double()
    original.load_state_dict(improved.state_dict())
    return improved, original


@pytest.mark.parametrize("exclude_positive", [True, False])
def test_improved_proxy_nca_reduces_to_proxy_nca(exclude_positive):
    x, labels = random_batch(0)
    improved, original = _proxy_pair(1.0, 0.0, exclude_positive)
    assert_same_value_and_grad(normalized(improved, labels), normalized(original, labels), x)


def test_improved_proxy_nca_hand_computed():
    loss = ImprovedProxyNCALoss(3, 2, gamma=2.0, lam=0.5).double()
    with torch.no_grad():
        loss.proxies.copy_(torch.tensor([[1.0, 0.0], [0.0, 1.0], [-1.0, 0.0]]))
    x = torch.tensor([[1.0, 0.0]], dtype=torch.float64)
    # Squared distances to the proxies: 0 (own class 0), 2, 4.
    # 1/2 log(1 + e^(2 (-0.5 + 0 - 2)) + e^(2 (-0.5 + 0 - 4)))
    expected = math.log(1 + math.exp(-5) + math.exp(-9)) / 2
    assert loss(x, torch.tensor([0])).item() == pytest.approx(expected)
    # Labelled class 2: d_y = 4; 1/2 log(1 + e^(2 (-0.5 + 4 - 0)) + e^(2 (-0.5 + 4 - 2)))
    expected = math.log(1 + math.exp(7) + math.exp(3)) / 2
    assert loss(x, torch.tensor([2])).item() == pytest.approx(expected)


def test_improved_proxy_nca_large_gamma_is_a_hinge_on_the_hardest_proxy():
    x, labels = random_batch(2)
    e = F.normalize(x, dim=1)
    lam = 0.3
    loss = ImprovedProxyNCALoss(4, 5, gamma=1e5, lam=lam).double()
    d = torch.cdist(e, F.normalize(loss.proxies.detach(), dim=1)).pow(2)
    gap = d.gather(1, labels[:, None]) - d - lam
    gap = gap.masked_fill(F.one_hot(labels, 4).bool(), float("-inf"))
    expected = torch.relu(gap.amax(1)).mean()
    assert loss(e, labels).item() == pytest.approx(expected.item(), abs=1e-4)


def test_proxy_nca_offset_shifts_only_negatives():
    # Exclude-positive form: every logit of the sum moves by -scale * lambda, so the loss by -0.5.
    x, labels = random_batch(1)
    torch.manual_seed(0)
    shifted = ProxyNCALoss(4, 5, scale=2.0, offset=0.25).double()
    plain = ProxyNCALoss(4, 5, scale=2.0).double()
    plain.load_state_dict(shifted.state_dict())
    assert shifted(x, labels).item() == pytest.approx(plain(x, labels).item() - 0.5)


def _leave_one_out_r1(e: torch.Tensor, labels: torch.Tensor) -> float:
    d = torch.cdist(e, e).fill_diagonal_(float("inf"))
    return (labels[d.argmin(1)] == labels).double().mean().item()


def test_training_a_linear_embedding_with_danml_separates_classes():
    # Behaviour, not a formula: Adam on a linear 8 -> 4 map of noisy class clusters lowers DANML and raises R@1.
    gen = torch.Generator().manual_seed(0)
    labels = torch.arange(6).repeat_interleave(10)
    x = torch.randn(6, 8, generator=gen, dtype=torch.float64)[labels] + 1.5 * torch.randn(60, 8, generator=gen)
    x = x.double()
    projection = torch.nn.Linear(8, 4, bias=False).double()
    loss = DANMLLoss()
    optimizer = torch.optim.Adam(projection.parameters(), lr=0.05)
    with torch.no_grad():
        first_loss, first_r1 = loss(projection(x), labels).item(), _leave_one_out_r1(F.normalize(projection(x)), labels)
    for _ in range(150):
        optimizer.zero_grad()
        loss(projection(x), labels).backward()
        optimizer.step()
    with torch.no_grad():
        last_loss, last_r1 = loss(projection(x), labels).item(), _leave_one_out_r1(F.normalize(projection(x)), labels)
    assert last_loss < first_loss - 0.05
    assert last_r1 > first_r1 + 0.1
