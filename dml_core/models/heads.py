"""Heads: the new layers on top of pooled backbone features.

A head's ``levels`` names the backbone levels it reads: ``None`` means the pooled final feature (N, d'), a
tuple means a dict ``{level: (N, C_level)}`` of pooled intermediate maps (``EmbeddingModel`` provides either).
DRML's relational head lives in ``relational_head`` (re-exported here).
"""

from __future__ import annotations

from collections.abc import Mapping

import torch
import torch.nn.functional as F
from torch import nn

from dml_core.models.relational_head import RelationalHead, RelationalOutput


class LinearEmbedding(nn.Module):
    """One fully connected layer from the pooled feature to the embedding, optionally L2-normalised."""

    levels = None

    def __init__(self, in_dim: int, dim: int, normalize: bool = True) -> None:
        super().__init__()
        self.fc = nn.Linear(in_dim, dim)
        self.normalize = normalize

    def forward(self, pooled: torch.Tensor) -> torch.Tensor:
        embedding = self.fc(pooled)
        return F.normalize(embedding, dim=1) if self.normalize else embedding


class MultiLevelFusionHead(nn.Module):
    """gpw's multi-level fusion: one FC per backbone level on its pooled map, outputs concatenated.

    With d outputs per level and three levels the embedding has 3d dimensions. ``normalize`` L2-normalises the
    concatenated vector (gpw: all features are normalised before distances); ``normalize_levels`` also
    normalises each level's part first (the paper does not say which; both are offered).
    """

    def __init__(
        self, level_dims: Mapping[str, int], dim: int, normalize: bool = True, normalize_levels: bool = False
    ) -> None:
        super().__init__()
        self.levels = tuple(level_dims)
        self.fcs = nn.ModuleDict({level: nn.Linear(channels, dim) for level, channels in level_dims.items()})
        self.normalize = normalize
        self.normalize_levels = normalize_levels

    def forward(self, pooled_levels: Mapping[str, torch.Tensor]) -> torch.Tensor:
        parts = [self.fcs[level](pooled_levels[level]) for level in self.levels]
        if self.normalize_levels:
            parts = [F.normalize(part, dim=1) for part in parts]
        embedding = torch.cat(parts, dim=1)
        return F.normalize(embedding, dim=1) if self.normalize else embedding


__all__ = ["LinearEmbedding", "MultiLevelFusionHead", "RelationalHead", "RelationalOutput"]
