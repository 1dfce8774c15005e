"""Global pooling of a feature map (N, C, h, w) into a vector (N, C).

``"avg+max"`` is the *sum* of global average and global max pooling, as in DRML's official code and the
Proxy-Anchor code it builds on (not their concatenation): the feature size stays C.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Literal

import torch
from torch import nn

from dml_core.registry import Registry

PoolingMode = Literal["avg", "max", "avg+max"]


def _avg(feature_map: torch.Tensor) -> torch.Tensor:
    return feature_map.mean(dim=(2, 3))


def _max(feature_map: torch.Tensor) -> torch.Tensor:
    return feature_map.amax(dim=(2, 3))


def _avg_plus_max(feature_map: torch.Tensor) -> torch.Tensor:
    return feature_map.mean(dim=(2, 3)) + feature_map.amax(dim=(2, 3))


POOLINGS: Registry[Callable[[torch.Tensor], torch.Tensor]] = Registry(
    "pooling", "model.pooling", {"avg": _avg, "max": _max, "avg+max": _avg_plus_max}
)
POOLING_MODES: tuple[str, ...] = tuple(POOLINGS)


def global_pool(feature_map: torch.Tensor, mode: PoolingMode) -> torch.Tensor:
    """Pool (N, C, h, w) to (N, C).

    >>> x = torch.tensor([[[[1.0, 3.0], [2.0, 6.0]]]])
    >>> [global_pool(x, m).item() for m in ("avg", "max", "avg+max")]
    [3.0, 6.0, 9.0]
    """
    return POOLINGS.lookup(mode)(feature_map)


class GlobalPool(nn.Module):
    """``global_pool`` as a module."""

    def __init__(self, mode: PoolingMode = "avg") -> None:
        super().__init__()
        self.reduce = POOLINGS.lookup(mode)  # looked up once: forward calls a plain function (torch.compile traces it)
        self.mode = mode

    def forward(self, feature_map: torch.Tensor) -> torch.Tensor:
        return self.reduce(feature_map)

    def extra_repr(self) -> str:
        return f"mode={self.mode!r}"
