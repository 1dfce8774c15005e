"""``EmbeddingModel``: backbone -> global pooling -> head, with the freezing options of the field."""

from __future__ import annotations

from typing import Any

import torch
from torch import nn

from dml_core.input_spec import InputSpec
from dml_core.models.backbones.base import Backbone
from dml_core.models.freezing import apply_backbone_freezing
from dml_core.models.pooling import GlobalPool, PoolingMode


class EmbeddingModel(nn.Module):
    """A backbone, a pooling mode and a head.

    Heads with ``levels = None`` get the pooled final map (N, feature_dim); heads naming levels get a dict of
    pooled intermediate maps. ``forward`` returns the head's output (a tensor, or a structured output with an
    ``embedding`` field); ``embed`` always returns the embedding tensor.

    ``frozen_bn`` keeps the backbone's BatchNorm frozen for the whole training (see ``freezing``); the
    backbone warm-up freeze is switched with ``set_backbone_frozen``. Both survive every ``train()`` call.
    """

    def __init__(self, backbone: Backbone, pooling: PoolingMode, head: nn.Module, frozen_bn: bool = False) -> None:
        super().__init__()
        self.backbone = backbone
        self.pool = GlobalPool(pooling)
        self.head = head
        self.frozen_bn = frozen_bn
        self.backbone_frozen = False
        missing = set(getattr(head, "levels", None) or ()) - set(backbone.level_names)
        if missing:
            raise ValueError(f"head reads levels {sorted(missing)}; {backbone.name} has {backbone.level_names}")
        self._apply_freezing()

    @property
    def input_spec(self) -> InputSpec:
        return self.backbone.input_spec

    @property
    def weights_id(self) -> str:
        """The backbone weights' identity for the results file: file name and sha256, or "random init"."""
        return self.backbone.weights_id

    def train(self, mode: bool = True) -> EmbeddingModel:
        super().train(mode)
        self._apply_freezing()
        return self

    def set_backbone_frozen(self, frozen: bool) -> None:
        """Freeze (warm-up) or release the whole backbone; frozen BN stays frozen either way."""
        self.backbone_frozen = frozen
        self._apply_freezing()

    def _apply_freezing(self) -> None:
        apply_backbone_freezing(self.backbone, self.frozen_bn, self.backbone_frozen)

    def forward(self, images: torch.Tensor) -> Any:
        levels = getattr(self.head, "levels", None)
        if levels:
            maps = self.backbone.forward_levels(images)
            return self.head({level: self.pool(maps[level]) for level in levels})
        return self.head(self.pool(self.backbone(images)))

    def embed(self, images: torch.Tensor) -> torch.Tensor:
        """The embedding tensor (N, D), whatever structure the head returns."""
        output = self(images)
        return output if isinstance(output, torch.Tensor) else output.embedding
