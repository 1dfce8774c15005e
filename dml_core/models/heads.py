"""Heads: the new layers on top of pooled backbone features.

A head's ``levels`` names the backbone levels it reads: ``None`` means the pooled final feature (N, d'), a
tuple means a dict ``{level: (N, C_level)}`` of pooled intermediate maps (``EmbeddingModel`` provides either).
DRML's relational head lives in ``relational_head`` (re-exported here). ``HEADS`` is the registry a recipe's
``model.head.name`` is looked up in: each head's class, what the builder fills in, and how it is built on a backbone.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

import torch
import torch.nn.functional as F
from torch import nn

from dml_core.errors import InputError
from dml_core.models.relational_head import RelationalHead, RelationalOutput
from dml_core.registry import Registry

if TYPE_CHECKING:
    from dml_core.models.backbones.base import Backbone


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


# A head on ``backbone``: (backbone, embedding_dim, normalize, the recipe's model.head.params) -> the head.
BuildHead = Callable[["Backbone", int, bool, dict[str, Any]], nn.Module]


@dataclass(frozen=True)
class HeadKind:
    """One registered head: its class (whose constructor the recipe check reads), the constructor parameters the
    builder fills in (``derived``), the recipe parameters the builder reads itself (``extra``: name -> type), and
    how it is built."""

    cls: type[nn.Module]
    derived: frozenset[str]
    build: BuildHead
    extra: Mapping[str, Any] = field(default_factory=dict)


def _linear(backbone: Backbone, dim: int, normalize: bool, params: dict[str, Any]) -> nn.Module:
    return LinearEmbedding(backbone.feature_dim, dim, normalize=normalize, **params)


def _multi_level_fusion(backbone: Backbone, dim: int, normalize: bool, params: dict[str, Any]) -> nn.Module:
    params = dict(params)
    levels = params.pop("levels", list(backbone.level_names[-3:]))
    unknown = sorted(set(levels) - set(backbone.level_names))
    if unknown:
        raise InputError(f"model.head.params.levels: {unknown} not in {backbone.name}'s {backbone.level_names}")
    level_dims = {level: backbone.level_dims[level] for level in levels}
    return MultiLevelFusionHead(level_dims, dim, normalize=normalize, **params)


def _relational(backbone: Backbone, dim: int, normalize: bool, params: dict[str, Any]) -> nn.Module:
    return RelationalHead(backbone.feature_dim, normalize=normalize, **params)  # its width is params' dim


HEADS: Registry[HeadKind] = Registry(
    "head",
    "model.head.name",
    {
        "linear": HeadKind(LinearEmbedding, frozenset({"in_dim", "dim", "normalize"}), _linear),
        "multi_level_fusion": HeadKind(
            MultiLevelFusionHead,
            frozenset({"level_dims", "dim", "normalize"}),
            _multi_level_fusion,
            extra={"levels": list[str]},
        ),
        "relational": HeadKind(RelationalHead, frozenset({"in_dim", "normalize"}), _relational),
    },
)

__all__ = ["HEADS", "HeadKind", "LinearEmbedding", "MultiLevelFusionHead", "RelationalHead", "RelationalOutput"]
