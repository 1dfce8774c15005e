"""The readings of issue 24, as the pinned recipes wire them: each value changes what a run does in the way its
description in reproduce/<key>/assumptions.yaml says (built from the real recipes, not from hand-set parameters)."""

import math

import numpy as np
import pytest
import torch

from dml_core.losses.cgml import rbf_adjacency
from dml_core.models import RelationalOutput
from dml_core.recipes import find_run, smoke_version
from dml_core.training import builders
from dml_core.training.optim import OPTIMIZERS, build_optimizer
from dml_core.training.setup import build_run


def _recipe(reference, **choices):
    return find_run(reference).recipe(choices)


@pytest.fixture(scope="module")
def embedded_root(tmp_path_factory, copy_glyph_sets):
    return copy_glyph_sets(tmp_path_factory.mktemp("data"))


def _cub_like_labels(classes=100, per_class=59):
    return np.repeat(np.arange(classes), per_class)


@pytest.mark.parametrize(("value", "seen_fraction"), [("whole", 1.0), ("half", 0.5)])
def test_damlrrm_shuffled_pool_whole_sees_every_training_image_half_sees_half(value, seen_fraction):
    recipe = _recipe("damlrrm/ours-cub200", **{"damlrrm.shuffled-pool": value})
    labels = _cub_like_labels()
    sampler = builders.build_sampler(recipe, labels)
    neat = sampler.group_sizes[0]
    seen = set()
    for epoch in range(2):
        sampler.set_epoch(epoch)
        for batch in sampler.epoch_batches():
            seen.update(batch[neat:])
    assert len(seen) / len(labels) == pytest.approx(seen_fraction, abs=0.01)


def test_cgml_baselines_train_on_one_batch_of_130_and_cgml_on_two_draws():
    labels = _cub_like_labels()
    baseline = builders.build_sampler(_recipe("cgml/triplet-cub200"), labels)
    assert baseline.group_sizes == (130,)
    batch = baseline.epoch_batches()[0]
    assert np.unique(labels[batch], return_counts=True)[1].tolist() == [10] * 13
    earlier = builders.build_sampler(_recipe("cgml/triplet-cub200", **{"cgml.baseline-batch": "two-batches"}), labels)
    assert earlier.group_sizes == (130, 130)
    assert builders.build_sampler(_recipe("cgml/cgml-triplet-cub200"), labels).group_sizes == (130, 130)


def _repeat_share(recipe, labels) -> float:
    sampler = builders.build_sampler(recipe, labels)
    shares = [len(set(b[:130]) & set(b[130:])) / 130 for b in sampler.epoch_batches()]
    return float(np.mean(shares))


def test_cgml_disjoint_draws_share_no_image_where_the_classes_allow():
    labels = _cub_like_labels()
    independent = _repeat_share(_recipe("cgml/cgml-triplet-cub200"), labels)
    disjoint = _repeat_share(_recipe("cgml/cgml-triplet-cub200", **{"cgml.graphs": "disjoint-batches"}), labels)
    assert 0.1 < independent < 0.25 and disjoint == 0.0  # 10 of 59 images drawn twice: about 1/6 shared


def test_cgml_small_classes_keep_only_classes_with_enough_images_when_asked():
    labels = np.repeat(np.arange(60), np.tile([3, 12], 30))  # SOP-like: half the classes have 3 images
    recipe = _recipe("cgml/triplet-sop", **{"cgml.small-classes": "enough-images"})
    batches = builders.build_sampler(recipe, labels).epoch_batches()
    assert all(np.bincount(labels[b]).max() == 10 and set(np.unique(labels[b]) % 2) == {1} for b in batches)
    repeated = builders.build_sampler(_recipe("cgml/triplet-sop"), labels).epoch_batches()
    assert any(set(np.unique(labels[b]) % 2) == {0, 1} for b in repeated)


def _npair_loss(recipe):
    return builders.build_loss_for(recipe, num_classes=13, embedding_dim=512, group_sizes=(130, 130))


def test_cgml_npair_makes_every_sample_an_anchor_by_default():
    assert _npair_loss(_recipe("cgml/cgml-npair-cub200")).base.anchors == "all"
    assert _npair_loss(_recipe("cgml/npair-cub200")).base.anchors == "all"
    earlier = _recipe("cgml/cgml-npair-cub200", **{"cgml.npair-anchors": "one-per-class"})
    assert _npair_loss(earlier).base.anchors == "one_per_class"


def test_cgml_kernel_keeps_a_graph_at_npair_scale_where_the_raw_reading_has_none():
    generator = torch.Generator().manual_seed(0)
    centres = torch.randn(13, 64, generator=generator)
    x = (centres.repeat_interleave(10, 0) + 0.7 * torch.randn(130, 64, generator=generator)) * 9 / 8  # norm ~9
    within = torch.block_diag(*[torch.ones(10, 10)] * 13).bool() & ~torch.eye(130, dtype=torch.bool)
    spreads = {}
    for value in ("normalized", "median", "raw"):
        loss = _npair_loss(_recipe("cgml/cgml-npair-cars196", **{"cgml.kernel": value}))
        x1, _, sigma = loss.graph_inputs(x, x)
        spreads[value] = rbf_adjacency(x1, sigma)[within].mean().item()
    assert spreads["normalized"] > 0.05 and spreads["median"] > 0.05
    assert spreads["raw"] < 1e-12  # sigma = 1 at norm 9: S is the identity


def test_drml_paper_text_freezes_bn_and_starts_the_updater_as_the_identity(embedded_root):
    recipe = smoke_version(_recipe("drml/drml-pa-cub200"))
    torch.manual_seed(0)
    parts = build_run(recipe, embedded_root, torch.device("cpu"))
    parts.model.train()
    norms = [m for m in parts.model.backbone.modules() if isinstance(m, torch.nn.modules.batchnorm._BatchNorm)]
    assert norms and not any(m.training for m in norms)
    assert not any(p.requires_grad for m in norms for p in m.parameters())
    head = parts.model.head
    dim = head.updater.weight.shape[0]
    assert torch.equal(head.updater.weight, torch.cat([torch.eye(dim), torch.zeros(dim, dim)], dim=1))
    assert head.normalize_nodes and head.node_input == "whole"


def test_drml_official_code_follows_the_released_code_point_by_point():
    pa = _recipe("drml/drml-pa-cub200", **{"drml.source": "official-code"})
    assert (pa.optimizer.name, pa.optimizer.lr, pa.sampler.params["batch_size"]) == ("adamw", 5e-5, 180)
    assert pa.loss.params["base_params"] == {"alpha": 64.0, "delta": 0.2} and pa.loss.params["lambda_recon"] == 1.0
    assert pa.model.pooling == "avg+max" and pa.model.head.params["node_input"] == "chunks"
    assert (pa.schedule.milestones, pa.schedule.unit, pa.training.epochs) == ([11, 21, 31, 41, 51], "epoch", 61)
    baseline = _recipe("drml/proxyanchor-cub200", **{"drml.source": "official-code"})
    assert (baseline.optimizer.lr, baseline.loss.lr_multiplier, baseline.loss.params["alpha"]) == (1e-4, 100.0, 32.0)
    assert pa.variant == baseline.variant == "drml.source=official-code"


def _released_proxies(rule, classes, dim):
    """A proxy set drawn by the released collectors' rule (zbr17/DRML's MultiProxyCollector: Kaiming normal,
    ProxyCollector: Kaiming uniform, both with a = sqrt(5) and torch's default fan-in mode), called directly."""
    init = torch.nn.init.kaiming_normal_ if rule == "normal" else torch.nn.init.kaiming_uniform_
    return init(torch.empty(classes, dim), a=math.sqrt(5))


def test_drml_official_code_starts_each_proxy_set_by_the_released_rule_and_scale():
    """At 100 classes the released sets start at mean norm about 1 / sqrt(3) (0.57), whatever their width; the
    default rule (Kaiming fan-out: std sqrt(2 / classes)) starts them at 1.6 (128-d) and 3.2 (512-d)."""
    pa, baseline = (
        _recipe(run, **{"drml.source": "official-code"}) for run in ("drml/drml-pa-cub200", "drml/proxyanchor-cub200")
    )
    torch.manual_seed(0)
    loss = builders.build_loss_for(pa, num_classes=100, embedding_dim=512, group_sizes=(180,))
    torch.manual_seed(0)
    branches = [_released_proxies("normal", 100, 128) for _ in range(4)]
    z = _released_proxies("uniform", 100, 512)
    for k, expected in enumerate(branches):
        assert torch.equal(loss.branch_loss(k).proxies.detach(), expected)
    assert torch.equal(loss.embedding_loss.proxies.detach(), z)
    for proxies in (*branches, z):
        assert proxies.norm(dim=1).mean().item() == pytest.approx(1 / math.sqrt(3), abs=0.03)
    torch.manual_seed(0)
    alone = builders.build_loss_for(baseline, num_classes=100, embedding_dim=512, group_sizes=(180,))
    torch.manual_seed(0)
    assert torch.equal(alone.proxies.detach(), _released_proxies("uniform", 100, 512))
    torch.manual_seed(0)
    paper_text = builders.build_loss_for(_recipe("drml/drml-pa-cub200"), 100, 512, (80,))
    assert paper_text.branch_loss(0).proxies.norm(dim=1).mean().item() == pytest.approx(1.6, abs=0.05)


def _adamw_twin(parameter, optimizer):
    """A copy of ``parameter`` under a fresh optimiser of the class and settings of ``parameter``'s group."""
    group = next(g for g in optimizer.param_groups if any(p is parameter for p in g["params"]))
    twin = torch.nn.Parameter(parameter.detach().clone())
    settings = {key: value for key, value in group.items() if key not in ("params", "name")}
    return twin, type(optimizer)([{"params": [twin], **settings}])


def test_drml_official_code_steps_an_empty_branchs_proxies_as_a_zero_gradient_parameter():
    """The released code runs each branch's ProxyAnchor loss on the branch's images even when there are none, so
    an empty branch's proxies get a zero gradient and AdamW still applies its decay and momentum: here they move
    exactly as a twin parameter of the same optimiser given a zero gradient. (Under paper-text they get no
    gradient and do not move: ``empty_branch: no_term``.)"""
    recipe = _recipe("drml/drml-pa-cub200", **{"drml.source": "official-code"})
    torch.manual_seed(1)
    loss = builders.build_loss_for(recipe, num_classes=5, embedding_dim=512, group_sizes=(20,))
    model = torch.nn.Module()
    model.backbone = torch.nn.Identity()
    optimizer = build_optimizer(recipe.optimizer, model, loss, recipe.loss.lr_multiplier)
    idle = loss.branch_loss(3).proxies
    twin, twin_optimizer = _adamw_twin(idle, optimizer)
    labels = torch.arange(5).repeat_interleave(4)
    for step, branches in enumerate((4, 3, 3)):  # every branch takes images, then branch 3 none, twice
        individual = torch.randn(20, 4, 128)
        errors = torch.rand(20, 4)
        errors[torch.arange(20), torch.arange(20) % branches] = -1.0  # image i to branch i mod branches
        output = RelationalOutput(torch.nn.functional.normalize(torch.randn(20, 512), dim=1), individual, errors)
        optimizer.zero_grad(set_to_none=True)
        loss(output, labels).backward()
        if step == 0:
            assert idle.grad.abs().sum() > 0
        twin.grad = idle.grad.clone() if step == 0 else torch.zeros_like(twin)
        before = idle.detach().clone()
        optimizer.step()
        twin_optimizer.step()
        assert torch.equal(idle.detach(), twin.detach())
        assert not torch.equal(idle.detach(), before)  # decay and momentum moved it


@pytest.mark.parametrize("run", ["cgml/cgml-triplet-cars196", "cgml/npair-cub200", "cgml/cgml-binomial-sop"])
def test_cgml_reduction_reaches_the_base_loss_and_leaves_the_default_hashed_as_before(run):
    default, summed = _recipe(run), _recipe(run, **{"cgml.reduction": "sum"})
    assert _npair_loss(default).base.reduction == "mean" and _npair_loss(summed).base.reduction == "sum"
    assert default.readings["cgml.reduction"] == "mean" and summed.variant == "cgml.reduction=sum"
    # the default computes what the runs computed before the reading existed, so it is hashed as they were
    assert "cgml.reduction" not in default.computation()["readings"] and "reduction" not in default.loss.params
    assert summed.content_hash() != default.content_hash()


def test_cgml_reduction_sum_scales_the_base_loss_by_its_number_of_terms_and_leaves_the_graph_term():
    generator = torch.Generator().manual_seed(0)
    x = torch.randn(8, 16, generator=generator)
    labels = torch.tensor([0, 0, 1, 1, 0, 0, 1, 1])  # two graphs of 2 classes x 2 images, class-aligned
    terms = {}
    for value in ("mean", "sum"):
        recipe = _recipe("cgml/cgml-npair-cars196", **{"cgml.reduction": value})
        loss = builders.build_loss_for(recipe, num_classes=2, embedding_dim=16, group_sizes=(4, 4))
        total = loss(x, labels)
        terms[value] = {name: term.item() for name, term in loss.last_terms.items()}
        terms[value].update(npair=loss.base.last_terms["npair"].item(), total=total.item())
    # the N-pair term over the union: 8 anchors (every sample), summed or averaged
    assert terms["sum"]["npair"] == pytest.approx(8 * terms["mean"]["npair"], rel=1e-6)
    assert terms["sum"]["graph_consistency"] == terms["mean"]["graph_consistency"] > 0
    assert terms["sum"]["total"] > terms["mean"]["total"]


def _shuffled_batches(sampler, epochs):
    neat = sampler.group_sizes[0]
    batches = []
    for epoch in range(epochs):
        sampler.set_epoch(epoch)
        batches += [tuple(batch[neat:]) for batch in sampler.epoch_batches()]
    return batches


def test_damlrrm_cycled_pool_repeats_its_shuffled_batches_with_its_own_period_and_whole_never_does():
    labels = _cub_like_labels()
    cycled = builders.build_sampler(_recipe("damlrrm/ours-cub200", **{"damlrrm.shuffled-pool": "cycled"}), labels)
    period, neat_period = len(cycled.pool_batches), len(cycled.neat)
    assert period != neat_period  # N^s != N^x: the same shuffled batch meets another neat batch
    batches = _shuffled_batches(cycled, 3)
    assert len(batches) > 2 * period
    assert all(batches[i] == batches[i + period] for i in range(len(batches) - period))  # B^s_1 = B^s_l
    assert len(set(batches)) == period and sorted(set().union(*batches)) == list(range(len(labels)))
    whole = builders.build_sampler(_recipe("damlrrm/ours-cub200", **{"damlrrm.shuffled-pool": "whole"}), labels)
    repeated = _shuffled_batches(whole, 3)
    assert len({frozenset(batch) for batch in repeated}) == len(repeated)  # reshuffled: no batch comes back


def test_drml_weight_decay_moves_an_idle_parameter_as_each_value_says_and_leaves_coupled_hashed_as_before():
    """A parameter whose loss gradient is zero (a branch the routing leaves idle): under coupled decay Adam's
    normalised step moves it by about lr, under AdamW's decoupled decay by lr x decay of itself, without decay not
    at all. The optimiser is built from each value's recipe settings."""
    run = "drml/drml-pa-cub200"
    start = torch.linspace(0.1, 1.0, 16, dtype=torch.float64).reshape(4, 4)  # |w| >= 0.1: decay term >> eps
    moved, hashes = {}, set()
    for value in ("coupled", "decoupled", "none"):
        recipe = _recipe(run, **{"drml.weight-decay": value})
        hashes.add(recipe.content_hash())
        settings = recipe.optimizer
        idle = torch.nn.Parameter(start.clone())
        optimizer = OPTIMIZERS[settings.name]([idle], lr=settings.lr, weight_decay=settings.weight_decay)
        idle.grad = torch.zeros_like(idle)
        optimizer.step()
        moved[value] = (start - idle.detach()) / settings.lr
    decay = _recipe(run).optimizer.weight_decay
    assert torch.allclose(moved["coupled"], torch.ones(4, 4, dtype=torch.float64), rtol=1e-3)  # lr a step, any weight
    assert torch.allclose(moved["decoupled"], decay * start, rtol=1e-3)  # lr x decay of the weight
    assert torch.equal(moved["none"], torch.zeros(4, 4, dtype=torch.float64))
    default = _recipe(run)
    assert default.readings["drml.weight-decay"] == "coupled" and default.variant == ""
    assert "drml.weight-decay" not in default.computation()["readings"]  # hashed as before the reading existed
    assert len(hashes) == 3


@pytest.mark.parametrize("run", ["drml/drml-pa-cub200", "drml/ael-pa-cub200"])
def test_drml_branch_weighting_reaches_the_loss_and_leaves_mean_hashed_as_before(run):
    """The value reaches the DRML loss the run builds (what each value does to a sample's weight:
    tests/losses/test_drml.py); the default computes what the runs did before the reading existed."""
    default, share = _recipe(run), _recipe(run, **{"drml.branch-weighting": "share"})
    built = {
        value: builders.build_loss_for(recipe, num_classes=100, embedding_dim=512, group_sizes=(80,)).branch_weighting
        for value, recipe in (("mean", default), ("share", share))
    }
    assert built == {"mean": "mean", "share": "share"}
    assert default.readings["drml.branch-weighting"] == "mean" and default.variant == ""
    assert "drml.branch-weighting" not in default.computation()["readings"]
    assert share.content_hash() != default.content_hash()
