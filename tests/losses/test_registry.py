import doctest
import pathlib

import pytest
import torch

import dml_core.losses as losses_pkg
from dml_core.errors import InputError
from dml_core.losses import (
    LOSSES,
    anml,
    base,
    build_loss,
    cgml,
    damlrrm,
    gpw,
    mining,
    npair,
    registry,
    spanning_tree,
)

PROXY_LOSSES = {"proxy_nca", "proxy_anchor", "improved_proxy_nca"}
WRAPPERS = {"cgml", "graph_consistency"}  # need a base loss


def test_registry_names_every_family():
    assert set(LOSSES) == {
        "contrastive",
        "triplet",
        "lifted",
        "generalized_lifted",
        "npair",
        "binomial",
        "multi_similarity",
        "margin",
        "proxy_nca",
        "proxy_anchor",
        "ranked_list",
        "danml",
        "improved_proxy_nca",
        "drml",
        "damlrrm",
        "cgml",
        "graph_consistency",
        "gpw_pair",
        "gpw_triplet",
    }


# DRML combines a base loss on the relational head's output (tests/losses/test_drml.py), not on a tensor.
@pytest.mark.parametrize("name", sorted(set(LOSSES) - {"drml"}))
def test_every_loss_builds_and_returns_a_finite_scalar_with_gradient(name):
    params = {"num_classes": 4, "embedding_dim": 6} if name in PROXY_LOSSES else {}
    if name in WRAPPERS:
        params = {"base": "binomial"}
    loss = build_loss(name, **params)
    x = torch.nn.functional.normalize(torch.randn(12, 6), dim=1).requires_grad_(True)
    labels = torch.arange(4).repeat_interleave(3)
    if name in WRAPPERS:  # a paired batch [A | B]: the same classes in the same order
        labels = torch.tensor([0, 0, 1, 1, 2, 2] * 2)
    value = loss(x, labels)
    assert value.shape == () and torch.isfinite(value)
    value.backward()
    assert torch.isfinite(x.grad).all()
    for term in getattr(loss, "last_terms", {}).values():
        assert not term.requires_grad
    assert bool(list(loss.parameters())) == (name in PROXY_LOSSES)


def test_unknown_name_lists_known_losses():
    with pytest.raises(
        InputError,
        match=r"field loss\.name: unknown loss 'circle'; expected one of binomial, cgml, contrastive, damlrrm, ",
    ):
        build_loss("circle")


def test_unknown_parameter_names_loss_parameter_and_accepted_ones():
    with pytest.raises(InputError, match=r"loss 'triplet': unknown parameter\(s\) alpha; accepted: margin, mining"):
        build_loss("triplet", alpha=1.0)


def test_missing_required_parameter():
    with pytest.raises(InputError, match=r"loss 'proxy_anchor': missing required parameter\(s\) num_classes"):
        build_loss("proxy_anchor", embedding_dim=8)


@pytest.mark.parametrize("module", [anml, base, mining, npair, registry, spanning_tree, damlrrm, cgml, gpw])
def test_doctests(module):
    result = doctest.testmod(module)
    assert result.failed == 0 and result.attempted > 0


def test_no_host_sync_in_loss_code():
    # .item() / .tolist() / .cpu() in a forward would stall the device every step.
    for path in pathlib.Path(losses_pkg.__file__).parent.glob("*.py"):
        code = "\n".join(line for line in path.read_text().splitlines() if not line.lstrip().startswith(">>>"))
        for forbidden in (".item()", ".tolist()", ".cpu()", ".numpy()"):
            assert forbidden not in code, f"{path.name} uses {forbidden}"
