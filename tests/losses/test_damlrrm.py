import doctest

import pytest
import torch

from dml_core.data import PKSampler, RandomBatchSampler, TwoStreamSampler
from dml_core.errors import InputError
from dml_core.losses import build_loss, damlrrm, with_run_values
from dml_core.losses.damlrrm import DAMLRRMLoss
from tests.cuda_guards.cuda_kernels import CudaGuard
from tests.cuda_guards.host_syncs import HostSyncs
from tests.losses.helpers import random_batch, value_and_grad

# A 1-D two-stream batch, alpha 1, beta 0.25 (positives should be within 0.75, negatives beyond 1.25).
# Neat: 0, 1, 3 (class 0), 3.5, 6 (class 1). Shuffled: 4.5 (class 0), 5 (class 1), 20 (class 2: not in neat).
X = torch.tensor([[0.0], [1.0], [3.0], [3.5], [6.0], [4.5], [5.0], [20.0]], dtype=torch.float64)
Y = torch.tensor([0, 0, 0, 1, 1, 0, 1, 2])
SIZES = (5, 3)

# Graph loss: tree edges 0-1 (d 1) and 1-3 (d 2), not 0-3 (d 3); class 1: 3.5-6 (d 2.5); one violating
# negative 3-3.5 (d 0.5). Terms 0.25^2 + 1.25^2 + 1.75^2 + 0.75^2 = 5.25 over 4 violating pairs.
GRAPH = 5.25 / 4
# Shuffled loss: 4.5 -> nearest class-0 neat point 3 (d 1.5): 0.75^2, negative 3.5 (d 1): 0.25^2;
# 5 -> nearest class-1 neat point 6 (d 1): 0.25^2; 20 has no positive and no close negative. 3 violations.
SHUFFLED = (0.5625 + 0.0625 + 0.0625) / 3


def loss(**params) -> DAMLRRMLoss:
    return DAMLRRMLoss(alpha=1.0, beta=0.25, group_sizes=SIZES, **params)


def test_hand_computed_value_and_terms():
    fn = loss()
    assert fn(X, Y).item() == pytest.approx(GRAPH + SHUFFLED, rel=1e-12)
    assert fn.last_terms["graph"].item() == pytest.approx(GRAPH, rel=1e-12)
    assert fn.last_terms["shuffled"].item() == pytest.approx(SHUFFLED, rel=1e-12)


def test_hand_computed_gradient():
    # d/dx of each squared hinge is 2 * hinge * dD/dx, divided by the loss's violation count (4, then 3).
    graph = torch.tensor([-0.5, -2.0, 4.0, -5.0, 3.5, 0.0, 0.0, 0.0], dtype=torch.float64) / 4
    shuffled = torch.tensor([0.0, 0.0, -1.5, 0.5, 0.5, 1.0, -0.5, 0.0], dtype=torch.float64) / 3
    _, grad = value_and_grad(lambda x: loss()(x, Y), X)
    torch.testing.assert_close(grad.flatten(), graph + shuffled, rtol=1e-12, atol=1e-12)


def test_full_positive_pairs_add_the_non_tree_pair():
    # "Full PPs" (Table 7): pair 0-3 (d 3) joins: + 2.25^2 and one more violation.
    fn = loss(positive_pairs="all", use_shuffled_loss=False)
    assert fn(X, Y).item() == pytest.approx((5.25 + 2.25**2) / 5, rel=1e-12)


def test_graph_only_and_shuffled_only_ablations():
    assert loss(use_shuffled_loss=False)(X, Y).item() == pytest.approx(GRAPH, rel=1e-12)  # OURS2
    assert loss(use_graph_loss=False)(X, Y).item() == pytest.approx(SHUFFLED, rel=1e-12)  # OURS1


def test_graph_only_accepts_a_one_stream_batch():
    one_stream = DAMLRRMLoss(alpha=1.0, beta=0.25, group_sizes=(5,), use_shuffled_loss=False)
    assert one_stream(X[:5], Y[:5]).item() == pytest.approx(GRAPH, rel=1e-12)


def test_within_shuffled_negatives_option():
    # Adds the shuffled pair 4.5-5 (d 0.5, classes 0 and 1): 0.75^2, one more violation.
    fn = loss(shuffled_negatives="cross_and_within")
    assert fn.shuffled_loss(X[:5], Y[:5], X[5:], Y[5:]).item() == pytest.approx((0.6875 + 0.5625) / 4)


def test_squared_distance_option():
    # Class-1 neat pair only (d^2 = 6.25): (6.25 - 0.75)^2 over one violation.
    fn = DAMLRRMLoss(1.0, 0.25, group_sizes=(2,), distance="squared_euclidean", use_shuffled_loss=False)
    assert fn(X[3:5], Y[3:5]).item() == pytest.approx(5.5**2)


def test_satisfied_constraints_give_zero_loss_and_gradient():
    # Same-class points 0.5 apart, classes 10 apart: every positive within 0.75, every negative beyond 1.25.
    x = torch.tensor([[0.0], [0.5], [10.0], [10.5], [0.2], [10.2]], dtype=torch.float64)
    y = torch.tensor([0, 0, 1, 1, 0, 1])
    value, grad = value_and_grad(lambda e: DAMLRRMLoss(1.0, 0.25, group_sizes=(4, 2))(e, y), x)
    assert value.item() == 0.0 and torch.all(grad == 0)


def test_two_per_class_tree_equals_all_pairs():
    x, labels = random_batch(0, classes=4, per_class=2, dim=3)
    order = torch.argsort(labels, stable=True)
    x, labels = x[order], labels[order]
    tree = DAMLRRMLoss(1.0, 0.25, group_sizes=(8,), use_shuffled_loss=False)(x, labels)
    full = DAMLRRMLoss(1.0, 0.25, group_sizes=(8,), use_shuffled_loss=False, positive_pairs="all")(x, labels)
    assert tree.item() == pytest.approx(full.item(), rel=1e-12)


def test_duplicate_embeddings_give_finite_gradients():
    x = torch.tensor([[1.0, 2.0], [1.0, 2.0], [3.0, 0.0], [1.0, 2.0], [3.0, 0.0], [0.0, 0.0]], dtype=torch.float64)
    y = torch.tensor([0, 0, 1, 0, 1, 2])
    _, grad = value_and_grad(lambda e: DAMLRRMLoss(group_sizes=(3, 3))(e, y), x)
    assert torch.isfinite(grad).all()


def test_defaults_are_the_papers_and_build_from_the_registry():
    fn = build_loss("damlrrm", group_sizes=(60, 60))
    assert (fn.alpha, fn.beta, fn.positive_pairs, fn.distance) == (30.0, 0.5, "tree", "euclidean")
    assert fn.group_sizes == (60, 60)


def test_bad_settings_are_input_errors():
    with pytest.raises(InputError, match="damlrrm: positive_pairs must be one of tree, all"):
        DAMLRRMLoss(positive_pairs="nearest")
    with pytest.raises(InputError, match="cannot both be false"):
        DAMLRRMLoss(use_graph_loss=False, use_shuffled_loss=False)
    with pytest.raises(InputError, match="needs a two-stream batch"):
        DAMLRRMLoss(group_sizes=(5,))(X[:5], Y[:5])
    with pytest.raises(InputError, match=r"group_sizes \(4, 3\) must be one or two sizes summing to"):
        DAMLRRMLoss(group_sizes=(4, 3))(X, Y)
    with pytest.raises(InputError, match="damlrrm: images_per_class must be at least 1, found 0"):
        DAMLRRMLoss(images_per_class=0)


def test_doctests():
    result = doctest.testmod(damlrrm)
    assert result.failed == 0 and result.attempted > 0


def test_gradient_descent_reaches_the_boundary_constraints():
    # Embeddings as free parameters: descent drives every tree edge below alpha - beta and every negative
    # beyond alpha + beta, so the loss reaches 0.
    gen = torch.Generator().manual_seed(0)
    x = torch.randn(16, 2, generator=gen, dtype=torch.float64).requires_grad_(True)
    y = torch.tensor([0, 0, 0, 0, 1, 1, 1, 1, 0, 1, 0, 1, 2, 2, 0, 1])
    fn = DAMLRRMLoss(alpha=1.0, beta=0.25, group_sizes=(8, 8))
    optimizer = torch.optim.SGD([x], lr=0.1)
    first = fn(x, y).item()
    for _ in range(300):
        optimizer.zero_grad()
        value = fn(x, y)
        value.backward()
        optimizer.step()
    assert first > 0.1 and fn(x, y).item() < 1e-3 * first


def two_stream_batch(seed: int, classes: int = 12, per_class: int = 5, dim: int = 16):
    """A paper-shaped batch ``[neat | shuffled]``: the neat stream's classes x per_class in random order, the
    shuffled stream's labels drawn from those classes and three more; float32 embeddings 30 apart on average."""
    gen = torch.Generator().manual_seed(seed)
    n = classes * per_class
    neat = torch.arange(classes).repeat_interleave(per_class)[torch.randperm(n, generator=gen)]
    labels = torch.cat([neat, torch.randint(0, classes + 3, (n,), generator=gen)])
    return 20.0 * torch.randn(2 * n, dim, generator=gen), labels


@pytest.mark.parametrize("seed", range(6))
def test_prim_in_images_per_class_steps_gives_the_same_loss_and_gradient_to_the_bit(seed):
    x, labels = two_stream_batch(seed)
    bounded = DAMLRRMLoss(group_sizes=(60, 60), images_per_class=5)
    full = DAMLRRMLoss(group_sizes=(60, 60))  # Prim over all 60 vertices of the neat stream
    value, grad = value_and_grad(lambda e: bounded(e, labels), x)
    full_value, full_grad = value_and_grad(lambda e: full(e, labels), x)
    assert value > 0 and torch.equal(value, full_value) and torch.equal(grad, full_grad)
    assert torch.equal(bounded.last_terms["graph"], full.last_terms["graph"])


def test_a_neat_class_larger_than_images_per_class_fails():
    x, labels = two_stream_batch(0, classes=4, per_class=6)
    with pytest.raises(RuntimeError, match="prim_forest: 5 steps leave a component unfinished"):
        DAMLRRMLoss(group_sizes=(24, 24), images_per_class=5)(x, labels)


def test_the_bounded_step_needs_no_host_sync_and_runs_as_cuda_would():
    x, labels = two_stream_batch(1)
    x.requires_grad_(True)
    with HostSyncs() as syncs, CudaGuard(host_only_numpy=True):
        DAMLRRMLoss(group_sizes=(60, 60), images_per_class=5)(x, labels).backward()
    assert syncs.total == 0 and x.grad is not None


def test_the_run_fills_in_the_samplers_images_per_class():
    labels = torch.arange(20).repeat_interleave(6).numpy()
    sampler = TwoStreamSampler(labels, classes_per_batch=12, images_per_class=5)
    assert PKSampler(labels, 12, 5).images_per_class == 5 and RandomBatchSampler(labels, 60).images_per_class is None
    run = {"group_sizes": sampler.group_sizes, "images_per_class": sampler.images_per_class}
    assert with_run_values("damlrrm", {}, **run) == {"group_sizes": (60, 60), "images_per_class": 5}
    assert with_run_values("damlrrm", {"images_per_class": 6}, **run)["images_per_class"] == 6  # a recipe's own
    assert build_loss("damlrrm", **with_run_values("damlrrm", {}, **run)).images_per_class == 5
