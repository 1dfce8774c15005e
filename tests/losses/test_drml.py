"""DRML's objective: hand-computed values, the paper's special cases, routing and gradient blocking."""

import math

import pytest
import torch

from dml_core.errors import InputError
from dml_core.losses import build_loss
from dml_core.losses.drml import DRMLLoss
from dml_core.models import RelationalHead, RelationalOutput
from tests.losses.helpers import square


def drml_from_recipe(base, base_params=None, **options) -> DRMLLoss:
    """DRML as a recipe writes it (the base loss by name): what the tests below construct."""
    return build_loss("drml", base=base, base_params=base_params, **options)


BASES = {
    "proxy_anchor": {},
    "triplet": {"mining": "semihard"},
    "margin": {"sampling": "distance_weighted"},
}


def _hand_batch() -> tuple[RelationalOutput, torch.Tensor]:
    """K = 2, dim 2, eight samples: 0-3 routed to branch 0, 4-7 to branch 1.

    Branch 0 sees the unit square (labels 0, 0, 1, 1), branch 1 the square halved (labels 2, 2, 3, 3); the other
    branch's feature of each sample is junk that routing must ignore. z puts both squares 2-D apart by 10.
    """
    unit, _ = square()
    junk = torch.tensor([[7.0, -3.0], [0.5, 9.0], [-4.0, 4.0], [2.0, 2.0]], dtype=torch.float64)
    individual = torch.stack([torch.cat([unit, junk]), torch.cat([junk, unit / 2])], dim=1)  # (8, 2, 2)
    errors = torch.tensor([[1.0, 3.0]] * 4 + [[2.0, 0.5]] * 4, dtype=torch.float64)
    far = torch.tensor([10.0, 10.0], dtype=torch.float64)
    zeros = torch.zeros(4, 2, dtype=torch.float64)
    embedding = torch.cat([torch.cat([unit, zeros], dim=1), torch.cat([zeros, unit / 2 + far], dim=1)])
    labels = torch.tensor([0, 0, 1, 1, 2, 2, 3, 3])
    return RelationalOutput(embedding, individual, errors), labels


def _hand_loss(**kwargs) -> DRMLLoss:
    triplet = {"margin": 0.5, "mining": "all", "distance": "euclidean"}
    return drml_from_recipe("triplet", triplet, num_features=2, feature_dim=2, normalize_individual=False, **kwargs)


def test_hand_computed_value_and_terms():
    # Triplet (all triplets, Euclidean, margin 0.5, mean over non-zero terms). Unit square: per anchor the
    # positive is at sqrt2 and the negatives at 2 and sqrt2: violations 0 and 0.5 -> J_ind^0 = 0.5. Halved square:
    # violations sqrt2/2 - 1 + 0.5 and 0.5 -> J_ind^1 = sqrt2/4. J_recon = mean(1, 3, 2, 0.5 each x4) = 1.625.
    # z: the two squares far apart (cross-group triplets give 0): non-zero terms 4 x 0.5, 4 x (sqrt2/2 - 0.5),
    # 4 x 0.5 -> J_emb = (4 + 4 (sqrt2/2 - 0.5)) / 12.
    loss = _hand_loss()
    output, labels = _hand_batch()
    ensem = 0.5 + math.sqrt(2) / 4
    emb = (4.0 + 4 * (math.sqrt(2) / 2 - 0.5)) / 12
    assert loss(output, labels).item() == pytest.approx(ensem + 0.1 * 1.625 + 10 * emb, rel=1e-12)
    assert loss.last_terms["ensem"].item() == pytest.approx(ensem, rel=1e-12)
    assert loss.last_terms["recon"].item() == pytest.approx(1.625, rel=1e-12)
    assert loss.last_terms["emb"].item() == pytest.approx(emb, rel=1e-12)
    assert [loss.last_terms[f"branch_{k}"].item() for k in range(2)] == [0.5, 0.5]
    assert not any(term.requires_grad for term in loss.last_terms.values())


def test_paper_weights_are_the_defaults():
    loss = _hand_loss()
    assert (loss.lambda_recon, loss.lambda_emb, loss.weight_ensem) == (0.1, 10.0, 1.0)  # Sec. 4.2


def test_routing_ignores_the_other_branches_features():
    # Each sample's loss reads only the feature of its own branch: the junk gets exactly zero gradient.
    output, labels = _hand_batch()
    individual = output.individual.clone().requires_grad_(True)
    loss = _hand_loss()
    loss(RelationalOutput(output.embedding, individual, output.reconstruction_error), labels).backward()
    assert individual.grad[4:, 0].abs().sum() == 0 and individual.grad[:4, 1].abs().sum() == 0
    assert individual.grad[:4, 0].abs().sum() > 0 and individual.grad[4:, 1].abs().sum() > 0
    # Changing the junk changes nothing.
    scrambled = output.individual.clone()
    scrambled[4:, 0], scrambled[:4, 1] = 100.0, -100.0
    before = _hand_loss()(output, labels)
    after = _hand_loss()(RelationalOutput(output.embedding, scrambled, output.reconstruction_error), labels)
    torch.testing.assert_close(before, after)


def test_routing_follows_the_smallest_reconstruction_error():
    # Swapping the two columns of the reconstruction error swaps the routing: now every sample meets its junk.
    output, labels = _hand_batch()
    swapped = RelationalOutput(output.embedding, output.individual, output.reconstruction_error.flip(1))
    loss = _hand_loss(lambda_recon=0.0, lambda_emb=0.0)
    junk = output.individual[torch.arange(8), torch.tensor([1] * 4 + [0] * 4)]
    expected = sum(
        loss.branch_loss(k)(junk[4 * (1 - k) : 4 * (2 - k)], labels[4 * (1 - k) : 4 * (2 - k)]) for k in (0, 1)
    )
    torch.testing.assert_close(loss(swapped, labels), expected)


@pytest.mark.parametrize("shared", [False, True])
def test_ensemble_loss_is_the_sum_of_per_branch_losses_on_routed_subsets(shared):
    torch.manual_seed(0)
    n, k, dim, classes = 18, 3, 4, 3
    individual = torch.randn(n, k, dim, dtype=torch.float64)
    errors = torch.rand(n, k, dtype=torch.float64)
    labels = torch.arange(classes).repeat_interleave(n // classes)
    output = RelationalOutput(torch.randn(n, k * dim, dtype=torch.float64), individual, errors)
    loss = drml_from_recipe(
        "proxy_anchor", num_classes=classes, embedding_dim=k * dim, num_features=k, shared_branch_loss=shared
    )
    loss.double()
    routing = errors.argmin(dim=1)
    normalized = torch.nn.functional.normalize(individual, dim=2)
    expected = sum(loss.branch_loss(b)(normalized[routing == b, b], labels[routing == b]) for b in range(k))
    loss(output, labels)
    torch.testing.assert_close(loss.last_terms["ensem"], expected.detach())
    proxies = [tuple(p.shape) for p in loss.parameters()]
    assert proxies == [(classes, dim)] * (1 if shared else k) + [(classes, k * dim)]


def test_single_feature_reduces_to_the_base_loss_on_that_feature():
    # K = 1: every sample is routed to the only branch, so J_ensem is the plain base loss on g_1.
    torch.manual_seed(1)
    individual = torch.randn(12, 1, 5, dtype=torch.float64)
    labels = torch.arange(4).repeat_interleave(3)
    output = RelationalOutput(
        torch.randn(12, 5, dtype=torch.float64), individual, torch.rand(12, 1, dtype=torch.float64)
    )
    loss = drml_from_recipe("triplet", {"mining": "all"}, num_features=1, lambda_recon=0.0, lambda_emb=0.0)
    plain = build_loss("triplet", mining="all")
    torch.testing.assert_close(
        loss(output, labels), plain(torch.nn.functional.normalize(individual[:, 0], dim=1), labels)
    )


def test_ablation_weights_switch_terms_off():
    # Table 3: w/o J_ensem / J_recon / J_emb are the weights set to 0.
    output, labels = _hand_batch()
    full = _hand_loss()
    full(output, labels)
    terms = full.last_terms
    for kwargs, expected in [
        ({"weight_ensem": 0.0}, 0.1 * terms["recon"] + 10 * terms["emb"]),
        ({"lambda_recon": 0.0}, terms["ensem"] + 10 * terms["emb"]),
        ({"lambda_emb": 0.0}, terms["ensem"] + 0.1 * terms["recon"]),
    ]:
        torch.testing.assert_close(_hand_loss(**kwargs)(output, labels), expected)


class _FirstCoordinateMean(torch.nn.Module):
    """A base loss that is a plain mean over its samples (of their first coordinate): its gradient is 1 / n on
    each of the n samples it sees, which makes each sample's weight in J_ensem readable."""

    def forward(self, embeddings: torch.Tensor, labels: torch.Tensor) -> torch.Tensor:
        return embeddings[:, 0].mean()


@pytest.mark.parametrize(("weighting", "lone", "others"), [("mean", 1.0, 1 / 4), ("share", 1 / 5, 1 / 5)])
def test_branch_weighting_sets_each_samples_weight(weighting, lone, others):
    # One sample routed to branch 0, four to branch 1 (a split batch, as the routing makes at a random start):
    # averaged per branch the lone sample weighs 1 and the others 1/4; weighted by share (Eq. 4's sum over
    # samples) every sample weighs 1/N whichever branch takes it.
    individual = torch.randn(5, 2, 3, dtype=torch.float64).requires_grad_(True)
    errors = torch.tensor([[0.0, 1.0]] + [[1.0, 0.0]] * 4, dtype=torch.float64)
    output = RelationalOutput(torch.randn(5, 6, dtype=torch.float64), individual, errors)
    loss = DRMLLoss(
        [_FirstCoordinateMean(), _FirstCoordinateMean()], _FirstCoordinateMean(), num_features=2,
        lambda_recon=0.0, lambda_emb=0.0, normalize_individual=False, branch_weighting=weighting,
    )  # fmt: skip
    loss(output, torch.arange(5)).backward()
    weights = torch.stack([individual.grad[0, 0, 0], *individual.grad[1:, 1, 0]])
    torch.testing.assert_close(weights, torch.tensor([lone] + [others] * 4, dtype=torch.float64))


@pytest.mark.parametrize("base", sorted(BASES))
@pytest.mark.parametrize("routed_to_branch_1", [0, 1])
def test_empty_or_singleton_branch_contributes_nothing(base, routed_to_branch_1):
    torch.manual_seed(2)
    n, k, dim = 12, 2, 4
    individual = torch.randn(n, k, dim).requires_grad_(True)
    errors = torch.tensor([[0.0, 1.0]] * n)
    errors[:routed_to_branch_1] = torch.tensor([1.0, 0.0])
    labels = torch.arange(3).repeat_interleave(4)
    output = RelationalOutput(torch.nn.functional.normalize(torch.randn(n, k * dim), dim=1), individual, errors)
    loss = drml_from_recipe(base, BASES[base], num_classes=3, embedding_dim=k * dim, num_features=k)
    value = loss(output, labels)
    assert torch.isfinite(value)
    value.backward()
    assert torch.isfinite(individual.grad).all()
    assert individual.grad[routed_to_branch_1:, 1].abs().sum() == 0  # samples not routed to branch 1
    assert loss.last_terms["branch_1"].item() == pytest.approx(routed_to_branch_1 / n)


def _head_and_loss(detach: bool) -> tuple[RelationalHead, DRMLLoss]:
    torch.manual_seed(3)
    head = RelationalHead(in_dim=10, num_features=3, dim=4, score_activation="softmax", detach_relational_inputs=detach)
    loss = drml_from_recipe("proxy_anchor", num_classes=4, embedding_dim=12, num_features=3)
    return head, loss


def _gradients(head: RelationalHead, loss: DRMLLoss, **weights) -> dict[str, bool]:
    """Which parts receive a non-zero gradient from the loss with ``weights``."""
    for name, value in weights.items():
        setattr(loss, name, value)
    trunk = torch.randn(16, 10, generator=torch.Generator().manual_seed(4)).requires_grad_(True)
    labels = torch.arange(4).repeat_interleave(4)
    head.zero_grad()
    loss(head(trunk), labels).backward()
    parts = {
        "trunk": [trunk],
        "individual": list(head.individual.parameters()),
        "decoders": list(head.decoders.parameters()),
        "relational": [
            *head.meta_a.parameters(),
            *head.meta_b.parameters(),
            *head.score.parameters(),
            *head.updater.parameters(),
        ],
    }
    return {
        part: any(p.grad is not None and bool(p.grad.abs().sum() > 0) for p in params) for part, params in parts.items()
    }


@pytest.mark.parametrize(
    ("weights", "reached"),
    [
        ({"lambda_recon": 0.0, "lambda_emb": 0.0}, {"trunk", "individual"}),  # J_ensem trains G (trunk + g_k)
        ({"weight_ensem": 0.0, "lambda_emb": 0.0}, {"decoders"}),  # J_recon trains P only
        ({"weight_ensem": 0.0, "lambda_recon": 0.0}, {"relational"}),  # J_emb trains h only, not G (Sec. 3.3)
    ],
)
def test_each_term_trains_only_its_part(weights, reached):
    head, loss = _head_and_loss(detach=True)
    got = _gradients(head, loss, **weights)
    assert {part for part, has in got.items() if has} == reached


def test_official_code_variant_lets_the_embedding_loss_reach_the_trunk():
    # The official code does not detach the nodes: J_emb then reaches the trunk and g_k (recorded deviation).
    head, loss = _head_and_loss(detach=False)
    got = _gradients(head, loss, weight_ensem=0.0, lambda_recon=0.0)
    assert got["trunk"] and got["individual"] and got["relational"] and not got["decoders"]


def test_branch_without_samples_leaves_its_encoder_untouched():
    head, loss = _head_and_loss(detach=True)
    trunk = torch.randn(8, 10)
    labels = torch.arange(4).repeat_interleave(2)
    output = head(trunk)
    errors = output.reconstruction_error.detach().clone()
    errors[:, 2] = errors.max() + 1.0  # nobody is routed to branch 2
    loss(RelationalOutput(output.embedding, output.individual, errors), labels).backward()
    assert head.individual[2].weight.grad.abs().sum() == 0
    assert head.individual[0].weight.grad.abs().sum() + head.individual[1].weight.grad.abs().sum() > 0


@pytest.mark.parametrize(("empty_branch", "gradient"), [("no_term", None), ("zero_gradient", 0.0)])
def test_an_empty_branchs_proxies_get_no_gradient_or_a_zero_one(empty_branch, gradient):
    # "no_term": Eq. 4's empty sum, the proxies out of the graph (the optimiser skips them); "zero_gradient": the
    # released code's branch loss on an empty batch, an exact zero gradient (the optimiser's decay still applies).
    head, _ = _head_and_loss(detach=True)
    loss = drml_from_recipe("proxy_anchor", num_classes=4, embedding_dim=12, num_features=3, empty_branch=empty_branch)
    output = head(torch.randn(8, 10))
    errors = output.reconstruction_error.detach().clone()
    errors[:, 2] = errors.max() + 1.0  # nobody is routed to branch 2
    value = loss(RelationalOutput(output.embedding, output.individual, errors), torch.arange(4).repeat_interleave(2))
    value.backward()
    idle = loss.branch_loss(2).proxies.grad
    assert idle is None if gradient is None else torch.equal(idle, torch.zeros_like(idle))
    assert loss.branch_loss(0).proxies.grad.abs().sum() > 0
    assert head.individual[2].weight.grad.abs().sum() == 0  # g_k: a zero gradient under both


def test_branch_and_embedding_losses_take_their_own_overrides():
    loss = drml_from_recipe(
        "proxy_anchor",
        {"alpha": 64.0},
        num_classes=3,
        embedding_dim=8,
        branch_base_params={"delta": 0.2},
        embedding_base_params={"proxy_init": "kaiming_uniform_a_sqrt5"},
    )
    assert (loss.branch_loss(0).alpha, loss.branch_loss(0).delta) == (64.0, 0.2)
    assert (loss.embedding_loss.alpha, loss.embedding_loss.delta) == (64.0, 0.1)
    assert loss.embedding_loss.proxies.abs().max() <= 1 / math.sqrt(8)  # the uniform rule's bound


def test_margin_sampling_is_seeded():
    torch.manual_seed(5)
    output = RelationalOutput(
        torch.nn.functional.normalize(torch.randn(16, 8), dim=1), torch.randn(16, 2, 4), torch.rand(16, 2)
    )
    labels = torch.arange(4).repeat_interleave(4)
    values = [drml_from_recipe("margin", num_features=2, feature_dim=4)(output, labels) for _ in range(2)]
    torch.testing.assert_close(values[0], values[1])


def test_bad_inputs_are_named():
    loss = drml_from_recipe("triplet", num_features=2, feature_dim=4)
    with pytest.raises(InputError, match=r"relational head's output.*got Tensor"):
        loss(torch.randn(4, 8), torch.arange(4))
    wrong = RelationalOutput(torch.randn(4, 12), torch.randn(4, 3, 4), torch.rand(4, 3))
    with pytest.raises(InputError, match=r"\(N, 2, 4\); got \(4, 3, 4\)"):
        loss(wrong, torch.arange(4))
    with pytest.raises(InputError, match="unknown loss 'circle'"):
        drml_from_recipe("circle")
    with pytest.raises(InputError, match="not 'drml' itself"):
        drml_from_recipe("drml")
    with pytest.raises(InputError, match=r"missing required parameter\(s\) num_classes"):
        drml_from_recipe("proxy_anchor", embedding_dim=8)
    with pytest.raises(InputError, match="embedding_dim 10 is not num_features"):
        drml_from_recipe("proxy_anchor", num_classes=3, embedding_dim=10)
    with pytest.raises(InputError, match="branch_weighting: expected 'mean' or 'share'; got 'sum'"):
        drml_from_recipe("triplet", num_features=2, branch_weighting="sum")
    with pytest.raises(InputError, match="empty_branch: expected 'no_term' or 'zero_gradient'; got 'skip'"):
        drml_from_recipe("triplet", num_features=2, empty_branch="skip")
    with pytest.raises(InputError, match="branch_base_params must be a mapping"):
        drml_from_recipe("triplet", num_features=2, branch_base_params=["margin", 0.1])


def test_registered_and_built_with_trainer_filled_parameters():
    loss = build_loss(
        "drml", base="proxy_anchor", base_params={"alpha": 64.0, "delta": 0.2}, num_classes=3, embedding_dim=8
    )
    assert isinstance(loss, DRMLLoss) and loss.feature_dim == 2
    assert loss.branch_loss(0).alpha == 64.0 and loss.embedding_loss.delta == 0.2
    assert [tuple(p.shape) for p in loss.parameters()] == [(3, 2)] * 4 + [(3, 8)]
