"""Heads: linear embedding and gpw's multi-level fusion (DRML's relational head: test_relational_head)."""

from __future__ import annotations

import torch
import torch.nn.functional as F

from dml_core.models.heads import LinearEmbedding, MultiLevelFusionHead


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
