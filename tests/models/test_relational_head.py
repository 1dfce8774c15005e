"""DRML's relational head against a loop-by-loop oracle, and its released-code options."""

from __future__ import annotations

import pytest
import torch
import torch.nn.functional as F

from dml_core.errors import InputError
from dml_core.losses import build_loss
from dml_core.models.relational_head import RelationalHead


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


def _chunk_oracle(head: RelationalHead, y: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
    """The released code's construction, one sample at a time: branch k reads chunk k of y (nodes, edges) and
    reconstructs it; nodes L2-normalised; the MSE per dimension; ReLU scores normalised over the sources."""
    K = head.num_features
    embeddings, errors = [], []
    for sample in y:
        chunks = sample.chunk(K)
        g = [F.normalize(head.individual[k](chunks[k]), dim=0) for k in range(K)]
        a = [head.meta_a[k](chunks[k]) for k in range(K)]
        b = [head.meta_b[k](chunks[k]) for k in range(K)]
        errors.append(torch.stack([(head.decoders[k](g[k]) - chunks[k]).pow(2).mean() for k in range(K)]))
        updated = []
        for i in range(K):
            scores = torch.stack([head.score(a[j] - b[i]).relu().squeeze() for j in range(K)])
            r = scores / scores.sum() if scores.sum() > 0 else torch.zeros(K)
            updated.append(head.updater(torch.cat([g[i], sum(r[j] * g[j] for j in range(K))])))
        embeddings.append(torch.cat(updated))
    return torch.stack(embeddings), torch.stack(errors)


def test_chunked_normalised_nodes_with_mse_match_the_released_codes_construction():
    torch.manual_seed(2)
    head = RelationalHead(
        in_dim=12, num_features=4, dim=5, node_input="chunks", normalize_nodes=True, reconstruction_measure="mse"
    )
    assert [tuple(fc.weight.shape) for fc in (head.individual[0], head.decoders[0], head.meta_a[0])] == [
        (5, 3),
        (3, 5),
        (5, 3),
    ]
    y = torch.randn(3, 12)
    output = head(y)
    embedding, errors = _chunk_oracle(head, y)
    torch.testing.assert_close(output.embedding, embedding)
    torch.testing.assert_close(output.reconstruction_error, errors)
    torch.testing.assert_close(output.individual.norm(dim=2), torch.ones(3, 4))  # unit-norm nodes
    with pytest.raises(InputError, match=r"pooled feature \(12\) to split into num_features \(5\) equal chunks"):
        RelationalHead(in_dim=12, num_features=5, node_input="chunks")


def test_the_identity_updater_start_makes_z_the_concatenated_nodes_whatever_the_messages():
    # U = [I | 0]: z = concat(g_1, ..., g_K) although the scores (random here) give non-zero messages. The
    # "w/o J_emb" ablation never trains U, so with this start it evaluates the concatenated nodes.
    torch.manual_seed(3)
    head = RelationalHead(in_dim=8, num_features=3, dim=4, identity_updater_init=True)
    torch.testing.assert_close(head.updater.weight, torch.cat([torch.eye(4), torch.zeros(4, 4)], dim=1))
    assert not head.updater.bias.any()
    y = torch.randn(6, 8)
    output = head(y)
    torch.testing.assert_close(output.embedding, output.individual.flatten(start_dim=1))
    with torch.no_grad():  # the messages are not zero: U = [I | I] would add them
        head.updater.weight[:, 4:] = torch.eye(4)
        assert not torch.allclose(head(y).embedding, output.embedding)
        head.updater.weight[:, 4:] = 0.0
    # and the ablation leaves U as it started: lambda_emb = 0 sends it no gradient (lambda_emb = 1 does)
    labels = torch.tensor([0, 0, 1, 1, 2, 2])
    for lambda_emb, reaches_updater in ((0.0, False), (1.0, True)):
        head.zero_grad()
        loss = build_loss("drml", base="multi_similarity", num_features=3, feature_dim=4, lambda_emb=lambda_emb)
        loss(head(torch.randn(6, 8)), labels).backward()
        assert bool(head.updater.weight.grad.any()) is reaches_updater
    # a random start mixes the nodes instead
    mixed = RelationalHead(in_dim=8, num_features=3, dim=4)
    out = mixed(y)
    assert not torch.allclose(out.embedding, out.individual.flatten(start_dim=1))


@pytest.mark.parametrize(("detach", "trunk_through_nodes"), [(True, False), ("edges", True), (False, True)])
def test_the_paths_the_embedding_loss_trains_under_each_detach_setting(detach, trunk_through_nodes):
    torch.manual_seed(4)
    head = RelationalHead(in_dim=12, num_features=3, dim=4, detach_relational_inputs=detach)
    y = torch.randn(6, 12, requires_grad=True)
    head(y).embedding.pow(2).sum().backward()
    trained = _grads(head)
    assert {"meta_a", "meta_b", "score", "updater"} <= trained
    assert ("individual" in trained) is trunk_through_nodes
    assert (y.grad is not None) is trunk_through_nodes
    assert "decoders" not in trained
    # the trunk's gradient through the edges alone: freeze the nodes' dependence on y
    with torch.no_grad():
        for fc in head.individual:
            fc.weight.zero_()
    y.grad = None
    head(y).embedding.pow(2).sum().backward()
    reaches_trunk_through_edges = y.grad is not None and bool(y.grad.any())
    assert reaches_trunk_through_edges is (detach is False)


def test_kaiming_fan_out_start_and_bad_options():
    torch.manual_seed(5)
    head = RelationalHead(in_dim=256, num_features=2, dim=512, layer_init="kaiming_fan_out")
    for layer in (head.individual[0], head.decoders[1], head.meta_a[0], head.meta_b[1]):
        assert not layer.bias.any()
        assert layer.weight.std().item() == pytest.approx((2 / layer.out_features) ** 0.5, rel=0.05)
    with pytest.raises(InputError, match="detach_relational_inputs: expected one of True, False, 'edges'"):
        RelationalHead(in_dim=8, detach_relational_inputs="nodes")
    with pytest.raises(InputError, match="reconstruction_measure: expected one of 'norm', 'mse', found 'l1'"):
        RelationalHead(in_dim=8, reconstruction_measure="l1")


def test_without_the_relational_module_z_is_the_concatenated_individual_features():
    # Table 2's AEL-PA: the ensemble alone. No a_k, b_k, s or U exist (so weight decay cannot move a U that no loss
    # trains, as it does in the "w/o J_emb" ablation); the ensemble's layers start as the full head's would.
    torch.manual_seed(5)
    full = RelationalHead(in_dim=8, num_features=3, dim=4, normalize=True, normalize_nodes=True)
    torch.manual_seed(5)
    ensemble = RelationalHead(in_dim=8, num_features=3, dim=4, normalize=True, normalize_nodes=True,
                              relational_module=False)  # fmt: skip
    names = {name.split(".")[0] for name, _ in ensemble.named_parameters()}
    assert names == {"individual", "decoders"}
    for part in ("individual", "decoders"):
        for mine, theirs in zip(getattr(ensemble, part).parameters(), getattr(full, part).parameters(), strict=True):
            torch.testing.assert_close(mine, theirs)
    y = torch.randn(6, 8)
    output = ensemble(y)
    torch.testing.assert_close(output.embedding, F.normalize(output.individual.flatten(start_dim=1), dim=1))
    torch.testing.assert_close(output.reconstruction_error, full(y).reconstruction_error)
    assert not torch.allclose(full(y).embedding, output.embedding)  # the relational module changes z
