import math

import pytest
import torch

from dml_core.errors import InputError
from dml_core.losses.base import make_proxies, masked_logsumexp, masked_softmax, pairwise_matrix


@pytest.mark.parametrize("add_one", [True, False])
def test_masked_logsumexp_empty_rows_give_zero_and_finite_gradient(add_one):
    x = torch.tensor([[0.5, 1.0], [2.0, 3.0]], dtype=torch.float64, requires_grad=True)
    mask = torch.tensor([[True, True], [False, False]])
    out = masked_logsumexp(x, mask, add_one=add_one)
    expected_first = torch.logsumexp(torch.tensor([0.5, 1.0] + ([0.0] if add_one else [])), dim=0)
    assert out[0].item() == pytest.approx(expected_first.item())
    assert out[1].item() == 0.0
    out.sum().backward()
    assert torch.isfinite(x.grad).all() and (x.grad[1] == 0).all()


def test_masked_softmax_is_a_weighted_mean_over_the_mask():
    x = torch.tensor([[1.0, 2.0, 50.0], [0.0, 0.0, 0.0]], dtype=torch.float64)
    mask = torch.tensor([[True, True, False], [False, False, False]])
    w = masked_softmax(x, mask)
    e = torch.exp(torch.tensor([1.0, 2.0], dtype=torch.float64))
    torch.testing.assert_close(w[0, :2], e / e.sum())
    assert w[0, 2] == 0 and (w[1] == 0).all()


def test_euclidean_gradient_is_finite_at_zero_distance():
    x = torch.tensor([[1.0, 2.0], [1.0, 2.0]], dtype=torch.float64, requires_grad=True)
    pairwise_matrix(x, x, "euclidean").sum().backward()
    assert torch.isfinite(x.grad).all()


def test_unknown_distance():
    with pytest.raises(InputError, match="distance must be one of euclidean, squared_euclidean, cosine, dot"):
        pairwise_matrix(torch.zeros(2, 2), torch.zeros(2, 2), "l1")


@pytest.mark.parametrize(
    ("rule", "call"),
    [
        ("kaiming_normal_fan_out", lambda t: torch.nn.init.kaiming_normal_(t, mode="fan_out")),
        ("kaiming_normal_a_sqrt5", lambda t: torch.nn.init.kaiming_normal_(t, a=math.sqrt(5))),
        ("kaiming_uniform_a_sqrt5", lambda t: torch.nn.init.kaiming_uniform_(t, a=math.sqrt(5))),
    ],
)
def test_proxies_start_as_their_rules_torch_call(rule, call):
    torch.manual_seed(0)
    expected = call(torch.empty(7, 5))
    torch.manual_seed(0)
    assert torch.equal(make_proxies(7, 5, "owner", rule).detach(), expected)


def test_unknown_proxy_rule_is_named():
    with pytest.raises(InputError, match=r"owner: proxy_init must be one of kaiming_normal_fan_out.*got 'xavier'"):
        make_proxies(3, 4, "owner", "xavier")
