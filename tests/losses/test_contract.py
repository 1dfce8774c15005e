"""The base every loss stands on (``MetricLoss``): its name, the batch check before any work, the record of its
terms; and the composite losses built around base losses they receive built."""

import pytest
import torch

from dml_core.errors import InputError
from dml_core.losses import LOSSES, CompositeLoss, MetricLoss, build_loss, loss_parameters, with_run_values
from dml_core.losses.cgml import GraphConsistencyLoss
from dml_core.losses.drml import DRMLLoss
from dml_core.losses.proxy_anchor import ProxyAnchorLoss
from dml_core.losses.triplet import TripletLoss
from dml_core.models import RelationalOutput

# The terms each loss's docstring promises in ``last_terms`` after a forward (drml: K = 2 branches here).
TERMS = {
    "contrastive": {"pos", "neg"},
    "triplet": set(),
    "lifted": set(),
    "generalized_lifted": set(),
    "npair": {"npair", "l2"},
    "binomial": {"pos", "neg"},
    "multi_similarity": {"pos", "neg"},
    "margin": {"pos", "neg", "beta_reg"},
    "proxy_nca": set(),
    "proxy_anchor": {"pos", "neg"},
    "ranked_list": {"pos", "neg"},
    "danml": {"pos_radius", "neg_radius"},
    "improved_proxy_nca": set(),
    "drml": {"ensem", "recon", "emb", "branch_0", "branch_1"},
    "damlrrm": {"graph", "shuffled"},
    "cgml": {"base", "graph_consistency"},
    "graph_consistency": {"base", "graph_consistency"},
    "gpw_pair": {"pos", "neg"},
    "gpw_triplet": set(),
}
# The parameters a run would fill in, and a base loss for the composites.
RUN = {"num_classes": 4, "embedding_dim": 6, "group_sizes": (6, 6)}
PARAMS = {
    "cgml": {"base": "binomial"},
    "graph_consistency": {"base": "triplet"},
    "drml": {"base": "triplet", "num_features": 2},
}
LABELS = torch.tensor([0, 0, 1, 1, 2, 3] * 2)  # [A | B]: two class-aligned halves, as cgml's paired sampler draws


def _built(name: str) -> MetricLoss:
    return build_loss(name, **with_run_values(name, PARAMS.get(name, {}), **RUN))


def _inputs(name: str, embeddings: torch.Tensor) -> object:
    """What the loss's forward takes: the embeddings, or for drml the relational head's output around them."""
    if name != "drml":
        return embeddings
    individual = embeddings.detach()[:, :6].reshape(len(embeddings), 2, 3)
    errors = torch.rand(len(embeddings), 2, dtype=embeddings.dtype)
    return RelationalOutput(embeddings, individual, errors)


def test_registry_covers_every_loss_and_its_documented_terms():
    assert set(TERMS) == set(LOSSES)


@pytest.mark.parametrize("name", sorted(LOSSES))
def test_every_loss_is_a_metric_loss_registered_under_its_name(name):
    cls = LOSSES[name]
    assert issubclass(cls, MetricLoss)
    assert cls.name == name or (name in cls.aliases and LOSSES[cls.name] is cls)


@pytest.mark.parametrize("name", sorted(LOSSES))
def test_the_batch_check_runs_first_and_names_the_loss(name):
    loss = _built(name)
    owner = type(loss).name
    good = torch.nn.functional.normalize(torch.randn(12, 6), dim=1)
    if name != "drml":  # drml reads the embedding out of the head's output, which it checks first (test_drml)
        with pytest.raises(InputError, match=rf"^{owner}: embeddings must be a 2-D float tensor \(N, D\); got shape"):
            loss(good[None], LABELS)
        with pytest.raises(InputError, match=rf"^{owner}: embeddings must be a 2-D float tensor .* dtype torch.int64"):
            loss(torch.ones(12, 6, dtype=torch.int64), LABELS)
    bad_labels = rf"^{owner}: labels must be a 1-D integer tensor of length 12; got shape"
    with pytest.raises(InputError, match=rf"{bad_labels} \(12,\) dtype torch.float32"):
        loss(_inputs(name, good), LABELS.float())
    with pytest.raises(InputError, match=rf"{bad_labels} \(11,\) dtype torch.int64"):
        loss(_inputs(name, good), LABELS[:11])
    assert loss.last_terms == {}  # nothing recorded by a refused batch


@pytest.mark.parametrize("dtype", [torch.float32, torch.float64])
@pytest.mark.parametrize("name", sorted(LOSSES))
def test_last_terms_hold_this_forwards_terms_detached(name, dtype):
    torch.manual_seed(0)
    loss = _built(name).to(dtype)
    assert loss.last_terms == {}
    embeddings = torch.nn.functional.normalize(torch.randn(12, 6, dtype=dtype), dim=1).requires_grad_(True)
    value = loss(_inputs(name, embeddings), LABELS)
    value.backward()
    assert set(loss.last_terms) == TERMS[name]
    for term in loss.last_terms.values():
        assert term.shape == () and term.dtype == dtype and not term.requires_grad and torch.isfinite(term)
    first = dict(loss.last_terms)
    other = torch.nn.functional.normalize(torch.randn(12, 6, dtype=dtype), dim=1)
    loss(_inputs(name, other), LABELS)
    assert set(loss.last_terms) == TERMS[name]  # replaced on every forward, never accumulated
    if first:
        assert any(not torch.equal(first[key], loss.last_terms[key]) for key in first)


def test_composites_are_the_losses_that_wrap_base_losses():
    assert {name for name, cls in LOSSES.items() if issubclass(cls, CompositeLoss)} == {
        "cgml",
        "graph_consistency",
        "drml",
    }


def test_cgml_receives_its_base_loss_built_and_equals_the_recipe_form():
    x = torch.nn.functional.normalize(torch.randn(12, 6, dtype=torch.float64), dim=1)
    base = TripletLoss(margin=0.1, mining="semihard")
    direct = GraphConsistencyLoss(base, lambda_=0.5, group_sizes=(6, 6))
    assert direct.base is base
    recipe = build_loss("cgml", base="triplet", base_params={"margin": 0.1, "mining": "semihard"}, lambda_=0.5)
    recipe.group_sizes = (6, 6)
    torch.testing.assert_close(direct(x, LABELS), recipe(x, LABELS), rtol=0, atol=0)


def test_drml_receives_its_branch_and_embedding_losses_built_and_equals_the_recipe_form():
    torch.manual_seed(4)
    direct = DRMLLoss([ProxyAnchorLoss(4, 3), ProxyAnchorLoss(4, 3)], ProxyAnchorLoss(4, 6), num_features=2)
    torch.manual_seed(4)  # the recipe form draws the proxies in the same order: two branches, then J_emb
    recipe = build_loss("drml", base="proxy_anchor", num_classes=4, embedding_dim=6, num_features=2)
    assert recipe.feature_dim == 3 and direct.feature_dim is None  # None: the branch width is not checked
    output = _inputs("drml", torch.nn.functional.normalize(torch.randn(12, 6), dim=1))
    torch.testing.assert_close(direct(output, LABELS), recipe(output, LABELS), rtol=0, atol=0)


def test_composites_refuse_a_base_that_is_not_built():
    with pytest.raises(InputError, match=r"^cgml: base must be a built loss; got 'triplet' \(build_loss\('cgml'"):
        GraphConsistencyLoss("triplet")
    with pytest.raises(InputError, match=r"one branch loss per feature \(num_features 2\) or one shared; got 3"):
        DRMLLoss([TripletLoss()] * 3, TripletLoss(), num_features=2)


def test_a_composite_is_no_base_loss_and_base_params_is_a_mapping():
    with pytest.raises(InputError, match=r"^loss 'cgml': base must be a plain loss, not 'drml' \(a composite loss\)"):
        build_loss("cgml", base="drml")
    with pytest.raises(InputError, match=r"^loss 'graph_consistency': base must be a plain loss, not 'cgml' itself"):
        build_loss("graph_consistency", base="cgml")
    with pytest.raises(InputError, match=r"^loss 'drml': base_params must be a mapping of the parameters of 'triplet'"):
        build_loss("drml", base="triplet", base_params=[0.1])


def test_run_values_fill_what_a_loss_takes_and_its_params_leave_unset():
    assert with_run_values("triplet", {"margin": 0.1}, **RUN) == {"margin": 0.1}
    assert with_run_values("proxy_anchor", {"num_classes": 9}, **RUN) == {"num_classes": 9, "embedding_dim": 6}
    assert with_run_values("damlrrm", {}, **RUN) == {"group_sizes": (6, 6)}
    assert with_run_values("damlrrm", {}, num_classes=4) == {}  # None fills nothing
    assert with_run_values("circle", {"a": 1}, **RUN) == {"a": 1}  # build_loss names the unknown loss


def test_base_losses_get_the_run_values_by_the_same_rule():
    # cgml's base sees the whole batch: the run's class count and embedding width; drml's branches their width
    cgml = build_loss("cgml", **with_run_values("cgml", {"base": "proxy_anchor"}, **RUN))
    assert tuple(cgml.base.proxies.shape) == (4, 6) and cgml.group_sizes == (6, 6)
    drml = build_loss("drml", **with_run_values("drml", {"base": "margin", "num_features": 2}, **RUN))
    assert [tuple(loss.beta.shape) for loss in [*drml.branch_losses, drml.embedding_loss]] == [(4,)] * 3
    assert "group_sizes" not in loss_parameters("drml")


def test_a_composites_parameters_are_its_recipe_form():
    assert list(loss_parameters("cgml"))[:4] == ["base", "base_params", "num_classes", "embedding_dim"]
    assert "lambda_" in loss_parameters("cgml") and "build_base" not in loss_parameters("cgml")
    drml = loss_parameters("drml")
    assert {"shared_branch_loss", "lambda_emb", "num_features"} <= set(drml)
    assert not {"branch_losses", "embedding_loss", "build_base"} & set(drml)
    assert drml["base"].annotation is str and drml["num_features"].default == 4
