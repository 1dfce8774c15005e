"""Global pooling of a feature map (N, C, h, w) into a vector (N, C).

``"avg+max"`` is the *sum* of global average and global max pooling, as in DRML's official code and the
Proxy-Anchor code it builds on (not their concatenation): the feature size stays C.
"""

from __future__ import annotations

from typing import Literal

import torch
from torch import nn

PoolingMode = Literal["avg", "max", "avg+max"]
POOLING_MODES: tuple[str, ...] = ("avg", "max", "avg+max")


def global_pool(feature_map: torch.Tensor, mode: PoolingMode) -> torch.Tensor:
    """Pool (N, C, h, w) to (N, C).

    >>> x = torch.tensor([[[[1.0, 3.0], [2.0, 6.0]]]])
    >>> [global_pool(x, m).item() for m in ("avg", "max", "avg+max")]
    [3.0, 6.0, 9.0]
    """
    if mode == "avg":
        return feature_map.mean(dim=(2, 3))
    if mode == "max":
        return feature_map.amax(dim=(2, 3))
    if mode == "avg+max":
        return feature_map.mean(dim=(2, 3)) + feature_map.amax(dim=(2, 3))
    raise ValueError(f"pooling: expected one of {POOLING_MODES}, found {mode!r}")


class GlobalPool(nn.Module):
    """``global_pool`` as a module."""

    def __init__(self, mode: PoolingMode = "avg") -> None:
        super().__init__()
        if mode not in POOLING_MODES:
            raise ValueError(f"pooling: expected one of {POOLING_MODES}, found {mode!r}")
        self.mode = mode

    def forward(self, feature_map: torch.Tensor) -> torch.Tensor:
        return global_pool(feature_map, self.mode)

    def extra_repr(self) -> str:
        return f"mode={self.mode!r}"
