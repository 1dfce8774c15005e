import doctest
import math

import numpy as np
import pytest
import torch
import torch.nn.functional as F

from dml_core.errors import InputError
from dml_core.losses import build_loss, cgml
from dml_core.losses.cgml import graph_consistency, median_bandwidth, rbf_adjacency
from tests.losses.helpers import value_and_grad


def cgml_from_recipe(base, base_params=None, **options):
    """cgml as a recipe writes it (the base loss by name): what the tests below construct."""
    return build_loss("cgml", base=base, base_params=base_params, **options)


# Two 2-node graphs in 1-D: X' = (0, a), X'' = (0, b); sigma 2. S' has off-diagonal e_a = exp(-a^2 / sigma).
A, B, SIGMA = 1.0, 2.0, 2.0
E_A, E_B = math.exp(-(A**2) / SIGMA), math.exp(-(B**2) / SIGMA)


def two_graphs() -> tuple[torch.Tensor, torch.Tensor]:
    return torch.tensor([[0.0], [A]], dtype=torch.float64), torch.tensor([[0.0], [B]], dtype=torch.float64)


def test_rbf_adjacency_hand_computed():
    s = rbf_adjacency(torch.tensor([[0.0, 0.0], [3.0, 4.0]], dtype=torch.float64), bandwidth=5.0)
    torch.testing.assert_close(s, torch.tensor([[1.0, math.exp(-5.0)], [math.exp(-5.0), 1.0]], dtype=torch.float64))


def test_upper_bound_form_value_and_gradient():
    # S' X'^T rows: (0 + e_a a, e_a 0 + a); Eq. 3 is the Frobenius norm of the row-wise difference.
    r0, r1 = E_A * A - E_B * B, A - B
    expected = math.hypot(r0, r1)
    first, second = two_graphs()
    value, grad = value_and_grad(lambda x: graph_consistency(x, second, SIGMA), first)
    assert value.item() == pytest.approx(expected, rel=1e-12)
    # d r0/da = e_a (1 - 2 a^2 / sigma), d r1/da = 1; d r0/dx0 = 1 + 2 a^2 e_a / sigma, d r1/dx0 = e_a.
    grad_a = (r0 * E_A * (1 - 2 * A**2 / SIGMA) + r1) / expected
    grad_0 = (r0 * (1 + 2 * A**2 * E_A / SIGMA) + r1 * E_A) / expected
    torch.testing.assert_close(grad.flatten(), torch.tensor([grad_0, grad_a], dtype=torch.float64))


def test_frobenius_form_value_and_gradient():
    # Eq. 1: ||S' - S''||_F^2 = 2 (e_a - e_b)^2; d/da = 4 (e_a - e_b) e_a (-2 a / sigma).
    first, second = two_graphs()
    value, grad = value_and_grad(lambda x: graph_consistency(x, second, SIGMA, form="frobenius"), first)
    assert value.item() == pytest.approx(2 * (E_A - E_B) ** 2, rel=1e-12)
    grad_a = 4 * (E_A - E_B) * E_A * (-2 * A / SIGMA)
    torch.testing.assert_close(grad.flatten(), torch.tensor([-grad_a, grad_a], dtype=torch.float64))


@pytest.mark.parametrize("form", cgml.FORMS)
def test_identical_graphs_give_zero_and_a_finite_zero_gradient(form):
    x = torch.randn(6, 3, dtype=torch.float64)
    value, grad = value_and_grad(lambda e: graph_consistency(e, x, 1.0, form), x)
    assert value.item() == 0.0
    assert torch.equal(grad, torch.zeros_like(grad))


@pytest.mark.parametrize("form", cgml.FORMS)
def test_gradient_flows_through_adjacency_and_features(form):
    gen = torch.Generator().manual_seed(0)
    x1, x2 = (torch.randn(4, 3, generator=gen, dtype=torch.float64, requires_grad=True) for _ in range(2))
    assert torch.autograd.gradcheck(lambda a, b: graph_consistency(a, b, 1.5, form), (x1, x2))


@pytest.mark.parametrize("seed", range(5))
def test_eq2_upper_bound_holds(seed):
    # Section 3.3: ||S'X'^T - S''X''^T||_F ||X'^T+||_F + ||S''||_F ||xi||_F ||X'^T+||_F >= ||S' - S''||_F,
    # where + is the pseudo-inverse (exact when X'^T has full row rank: nodes <= feature dimension).
    gen = torch.Generator().manual_seed(seed)
    x1, x2 = (torch.randn(4, 6, generator=gen, dtype=torch.float64) for _ in range(2))
    s1, s2 = rbf_adjacency(x1, 3.0), rbf_adjacency(x2, 3.0)
    pinv = torch.linalg.matrix_norm(torch.linalg.pinv(x1))
    bound = (
        graph_consistency(x1, x2, 3.0) * pinv + torch.linalg.matrix_norm(s2) * torch.linalg.matrix_norm(x2 - x1) * pinv
    )
    assert torch.linalg.matrix_norm(s1 - s2) <= bound + 1e-12


def paired_batch(seed: int = 0) -> tuple[torch.Tensor, torch.Tensor]:
    """[A | B]: 3 classes x 2 images each, the same class order in both, L2-normalised."""
    gen = torch.Generator().manual_seed(seed)
    x = F.normalize(torch.randn(12, 5, generator=gen, dtype=torch.float64), dim=1)
    block = torch.tensor([0, 0, 1, 1, 2, 2])
    return x, torch.cat([block, block])


@pytest.mark.parametrize(
    ("base", "params"),
    [("triplet", {"margin": 0.1}), ("npair", {"negatives": "all"}), ("binomial", {})],
)
def test_lambda_zero_is_the_base_loss(base, params):
    x, y = paired_batch()
    wrapped = build_loss("cgml", base=base, base_params=params, lambda_=0.0, group_sizes=(6, 6))
    plain = build_loss(base, **params)
    torch.testing.assert_close(wrapped(x, y), plain(x, y), rtol=0, atol=0)


def test_total_is_base_plus_lambda_times_regulariser():
    x, y = paired_batch(1)
    fn = cgml_from_recipe("binomial", lambda_=0.3, bandwidth=0.7, group_sizes=(6, 6))
    base = build_loss("binomial")(x, y)
    regulariser = graph_consistency(x[:6], x[6:], 0.7)
    torch.testing.assert_close(fn(x, y), base + 0.3 * regulariser)
    torch.testing.assert_close(fn.last_terms["graph_consistency"], regulariser)


def test_halves_pair_consecutive_rows_of_a_pk_batch():
    x, _ = paired_batch(2)
    y = torch.tensor([0, 0, 0, 0, 1, 1, 1, 1, 2, 2, 2, 2])  # PK: 3 classes x 4
    fn = cgml_from_recipe("triplet", lambda_=1.0, graphs="halves")
    expected = build_loss("triplet")(x, y) + graph_consistency(x[0::2], x[1::2], 1.0)
    torch.testing.assert_close(fn(x, y), expected)


def test_base_on_each_averages_the_two_graphs():
    x, y = paired_batch(3)
    fn = cgml_from_recipe("binomial", lambda_=0.0, base_on="each", group_sizes=(6, 6))
    base = build_loss("binomial")
    torch.testing.assert_close(fn(x, y), (base(x[:6], y[:6]) + base(x[6:], y[6:])) / 2)


def test_papers_base_settings_reach_the_base_loss():
    fn = build_loss("cgml", base="binomial", base_params={"alpha": 2.0, "beta": 0.5, "neg_cost": 25.0})
    assert (fn.base.alpha, fn.base.beta, fn.base.neg_cost) == (2.0, 0.5, 25.0)
    assert build_loss("graph_consistency", base="triplet", base_params={"margin": 0.1}).base.margin == 0.1


def test_bad_batches_and_settings_are_input_errors():
    x, y = paired_batch()
    with pytest.raises(InputError, match="not class-aligned"):
        cgml_from_recipe("triplet", group_sizes=(6, 6))(x, torch.cat([y[:6], y[6:].flip(0)]))
    with pytest.raises(InputError, match="same number of nodes; got 8 and 4"):
        cgml_from_recipe("triplet", group_sizes=(8, 4))(x, y)
    with pytest.raises(InputError, match="base must be a plain loss"):
        cgml_from_recipe("cgml")
    with pytest.raises(InputError, match="unknown loss 'circle'"):
        cgml_from_recipe("circle")
    with pytest.raises(InputError, match="bandwidth must be positive"):
        cgml_from_recipe("triplet", bandwidth=0.0)
    with pytest.raises(InputError, match="cgml: graphs must be one of two_batches, halves"):
        cgml_from_recipe("triplet", graphs="thirds")
    with pytest.raises(InputError, match="cgml: bandwidth must be one of median; got 'mean'"):
        cgml_from_recipe("triplet", bandwidth="mean")
    with pytest.raises(InputError, match="cgml: graph_on must be one of embeddings, normalized; got 'unit'"):
        cgml_from_recipe("triplet", graph_on="unit")


def test_median_bandwidth_is_the_median_squared_distance_within_the_graphs():
    # X' = (0, 1, 3): squared distances 1, 9, 4; X'' = (0, 2, 2): 4, 4, 0. Median of the six: 4 (diagonals out).
    first, second = torch.tensor([[0.0], [1.0], [3.0]]), torch.tensor([[0.0], [2.0], [2.0]])
    assert median_bandwidth(first, second).item() == 4.0
    # an even count takes the mean of the middle two (as numpy's median): (1 + 4) / 2
    assert median_bandwidth(first[:2], torch.tensor([[0.0], [2.0]])).item() == 2.5
    assert median_bandwidth(torch.zeros(3, 2), torch.zeros(3, 2)).item() > 0  # never a zero sigma


def test_median_bandwidth_term_equals_the_hand_computation_with_sigma_held_fixed():
    x, y = paired_batch(4)
    x = 9.0 * x  # N-pair's scale
    fn = cgml_from_recipe("npair", {"negatives": "all"}, lambda_=1.0, bandwidth="median", group_sizes=(6, 6))
    first, second = x[:6], x[6:]
    squared = [torch.pdist(g).pow(2) for g in (first, second)]  # each pair once
    sigma = torch.tensor(float(np.median(torch.cat(squared).numpy())), dtype=torch.float64)  # 30 values
    regulariser = graph_consistency(first, second, sigma)
    value, grad = value_and_grad(lambda e: fn(e, y), x)
    base_value, base_grad = value_and_grad(lambda e: build_loss("npair", negatives="all")(e, y), x)
    # sigma is a scale read off the batch, not a path for the gradient: the term's gradient is the fixed-sigma one
    _, term_grad = value_and_grad(lambda e: graph_consistency(e[:6], e[6:], sigma), x)
    torch.testing.assert_close(value, base_value + regulariser)
    torch.testing.assert_close(grad, base_grad + term_grad)
    torch.testing.assert_close(fn.last_terms["bandwidth"], sigma)


def test_graph_on_normalized_builds_the_term_on_unit_vectors_and_leaves_the_base_loss_alone():
    x, y = paired_batch(5)
    x = x * torch.linspace(2.0, 12.0, 12, dtype=torch.float64)[:, None]  # unnormalised, uneven norms
    fn = cgml_from_recipe("npair", lambda_=0.5, graph_on="normalized", group_sizes=(6, 6))
    unit = F.normalize(x, dim=1)
    expected = build_loss("npair")(x, y) + 0.5 * graph_consistency(unit[:6], unit[6:], 1.0)
    torch.testing.assert_close(fn(x, y), expected)


def training_like_graphs(norm: float, within_cosine: float, seed: int = 0) -> tuple[torch.Tensor, torch.Tensor]:
    """Two class-aligned 512-d graphs of 13 classes x 10 (the paper's paired batch): every embedding is its
    class centre plus independent noise, with the expected cosine ``within_cosine`` between two images of a
    class (0 across classes), and a norm of ``norm`` give or take 10% (the base loss's scale)."""
    gen = torch.Generator().manual_seed(seed)
    centres = F.normalize(torch.randn(13, 512, generator=gen, dtype=torch.float64), dim=1).repeat_interleave(10, 0)
    noise_scale = math.sqrt(1 / within_cosine - 1)  # cos = 1 / (1 + noise^2) for unit centre and noise

    def graph() -> torch.Tensor:
        noise = F.normalize(torch.randn(130, 512, generator=gen, dtype=torch.float64), dim=1)
        norms = norm * (1 + 0.1 * torch.randn(130, 1, generator=gen, dtype=torch.float64))
        return F.normalize(centres + noise_scale * noise, dim=1) * norms

    return graph(), graph()


def mean_within_class_entry(s: torch.Tensor) -> float:
    """The mean off-diagonal entry of S inside the class blocks (10 x 10 each)."""
    block = torch.block_diag(*[torch.ones(10, 10, dtype=torch.bool)] * 13) & ~torch.eye(130, dtype=torch.bool)
    return s[block].mean().item()


# the embedding scale each base loss trains at: unit vectors (triplet, binomial, MS, RLL: model.normalize true),
# and N-pair's unnormalised embeddings (norm about 9 in training)
SCALES = {"normalised losses": 1.0, "npair": 9.0}


@pytest.mark.parametrize("within_cosine", [0.5, 0.1], ids=["separated", "early"])
@pytest.mark.parametrize("scale", SCALES.values(), ids=SCALES.keys())
@pytest.mark.parametrize(
    "kernel", [{"graph_on": "normalized"}, {"bandwidth": "median"}], ids=["graph_on=normalized", "bandwidth=median"]
)
def test_the_graph_is_far_from_the_identity_at_every_base_losss_scale(kernel, scale, within_cosine):
    x1, x2 = training_like_graphs(scale, within_cosine)
    fn = cgml_from_recipe("triplet", lambda_=1.0, group_sizes=(130, 130), **kernel)
    first, second, sigma = fn.graph_inputs(x1, x2)
    for graph in (first, second):
        assert mean_within_class_entry(rbf_adjacency(graph, sigma)) > 0.05


def test_sigma_one_on_npairs_scale_makes_the_graph_the_identity():
    # the reason for the kernel options: sigma = 1 on raw N-pair embeddings leaves no edge
    x1, _ = training_like_graphs(SCALES["npair"], 0.5)
    s = rbf_adjacency(x1, 1.0)
    assert (s - torch.eye(130, dtype=s.dtype)).abs().max().item() < 1e-12
    assert mean_within_class_entry(rbf_adjacency(training_like_graphs(1.0, 0.5)[0], 1.0)) > 0.05


def test_lambda_zero_with_halves_is_the_base_loss_on_one_pk_batch():
    # the paper's baselines on one minibatch of 13 x 10: sampler pk, graphs halves, lambda 0
    gen = torch.Generator().manual_seed(6)
    x, y = torch.randn(130, 8, generator=gen, dtype=torch.float64), torch.arange(13).repeat_interleave(10)
    fn = cgml_from_recipe("npair", {"negatives": "all"}, lambda_=0.0, graphs="halves")
    torch.testing.assert_close(fn(x, y), build_loss("npair", negatives="all")(x, y), rtol=0, atol=0)


def test_doctests():
    result = doctest.testmod(cgml)
    assert result.failed == 0 and result.attempted > 0
