"""Heads: linear embedding, gpw's multi-level fusion, DRML's relational head against a loop-by-loop oracle."""

from __future__ import annotations

import pytest
import torch
import torch.nn.functional as F

from dml_core.models.heads import LinearEmbedding, MultiLevelFusionHead, RelationalHead


def test_linear_embedding_shape_and_normalisation():
    pooled = torch.randn(5, 16)
    head = LinearEmbedding(16, 8)
    embedding = head(pooled)
    assert embedding.shape == (5, 8)
    torch.testing.assert_close(embedding.norm(dim=1), torch.ones(5))
    raw = LinearEmbedding(16, 8, normalize=False)
    raw.load_state_dict(head.state_dict())
    torch.testing.assert_close(F.normalize(raw(pooled), dim=1), embedding)


def test_fusion_head_concatenates_one_fc_per_level_in_level_order():
    dims = {"inception3": 6, "inception4": 10, "inception5": 8}
    head = MultiLevelFusionHead(dims, dim=4, normalize=False)
    pooled = {level: torch.randn(3, channels) for level, channels in dims.items()}
    expected = torch.cat([head.fcs[level](pooled[level]) for level in dims], dim=1)
    torch.testing.assert_close(head(pooled), expected)
    assert head.levels == ("inception3", "inception4", "inception5")

    normalized = MultiLevelFusionHead(dims, dim=4, normalize=True, normalize_levels=True)
    normalized.load_state_dict(head.state_dict())
    parts = [F.normalize(head.fcs[level](pooled[level]), dim=1) for level in dims]
    torch.testing.assert_close(normalized(pooled), F.normalize(torch.cat(parts, dim=1), dim=1))


def _relational_oracle(head: RelationalHead, y: torch.Tensor) -> torch.Tensor:
    """Eqs. 5-9 of DRML written one sample, one node, one edge at a time (ReLU scores)."""
    K = head.num_features
    out = []
    for sample in y:
        g = [head.individual[k](sample) for k in range(K)]
        a = [head.meta_a[k](sample) for k in range(K)]
        b = [head.meta_b[k](sample) for k in range(K)]
        updated = []
        for i in range(K):
            scores = torch.stack([head.score(a[j] - b[i]).relu().squeeze() for j in range(K)])  # s(R_ji)
            r = scores / scores.sum() if scores.sum() > 0 else torch.zeros(K)
            message = sum(r[j] * g[j] for j in range(K))
            updated.append(head.updater(torch.cat([g[i], message])))
        out.append(torch.cat(updated))
    return torch.stack(out)


def test_relational_head_matches_the_equations_and_shapes():
    torch.manual_seed(0)
    head = RelationalHead(in_dim=12, num_features=4, dim=5)
    y = torch.randn(3, 12)
    output = head(y)
    assert output.embedding.shape == (3, 20)
    assert output.individual.shape == (3, 4, 5)
    assert output.reconstruction_error.shape == (3, 4)
    torch.testing.assert_close(output.embedding, _relational_oracle(head, y))
    expected_error = torch.stack([(head.decoders[k](head.individual[k](y)) - y).norm(dim=1) for k in range(4)], dim=1)
    torch.testing.assert_close(output.reconstruction_error, expected_error)
    assert output.branch_assignment.tolist() == expected_error.argmin(dim=1).tolist()


def _grads(module: torch.nn.Module) -> set[str]:
    return {name.split(".")[0] for name, p in module.named_parameters() if p.grad is not None and p.grad.any()}


def test_reconstruction_loss_trains_only_the_decoders():
    head = RelationalHead(in_dim=12, num_features=3, dim=4)
    y = torch.randn(6, 12, requires_grad=True)
    head(y).reconstruction_error.mean().backward()
    assert _grads(head) == {"decoders"}
    assert y.grad is None


@pytest.mark.parametrize(("detach", "reaches_trunk"), [(True, False), (False, True)])
def test_embedding_loss_reaches_g_and_the_trunk_only_without_detaching(detach, reaches_trunk):
    torch.manual_seed(1)
    head = RelationalHead(in_dim=12, num_features=3, dim=4, detach_relational_inputs=detach)
    y = torch.randn(6, 12, requires_grad=True)
    head(y).embedding.pow(2).sum().backward()
    trained = _grads(head)
    assert {"meta_a", "meta_b", "score", "updater"} <= trained
    assert ("individual" in trained) is reaches_trunk
    assert (y.grad is not None) is reaches_trunk
    assert "decoders" not in trained


def test_all_zero_relu_scores_give_zero_messages_not_nan():
    head = RelationalHead(in_dim=6, num_features=2, dim=3, identity_updater_init=True)
    with torch.no_grad():
        head.score.weight.zero_()
        head.score.bias.fill_(-1.0)  # every score negative: ReLU makes all of them 0
    output = head(torch.randn(4, 6))
    # U = [I | 0] and zero messages: each updated node is its individual feature.
    torch.testing.assert_close(output.embedding, output.individual.flatten(start_dim=1))


def test_softmax_scores_are_a_distribution_over_sources():
    head = RelationalHead(in_dim=6, num_features=3, dim=2, score_activation="softmax")
    weights = head._normalize_scores(torch.randn(2, 3, 3))
    torch.testing.assert_close(weights.sum(dim=1), torch.ones(2, 3))
    with pytest.raises(ValueError, match="score_activation"):
        RelationalHead(in_dim=6, score_activation="sigmoid")
