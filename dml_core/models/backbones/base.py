"""What every backbone offers: input convention, feature sizes, named intermediate maps, weight loading.

A backbone returns *unpooled* feature maps; pooling and heads live elsewhere (``dml_core.models.pooling``,
``dml_core.models.heads``) so a recipe can change either without touching the network.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from types import MappingProxyType

import torch
from torch import nn

from dml_core.input_spec import InputSpec
from dml_core.models.weights import RANDOM_INIT

# Channel-width multipliers a backbone can be built with: 1 is the published network; the narrower ones (every
# channel count divided by 2, 4 or 8, the same layers and connections) are for the CPU mini tier, which trains
# from random weights (no published file fits them).
WIDTHS = (1.0, 0.5, 0.25, 0.125)


class Backbone(nn.Module):
    """Base class: subclasses set the class attributes and implement ``forward_levels``.

    ``level_names`` lists the maps ``forward_levels`` returns, shallow to deep; the last one is the final
    feature map that ``forward`` returns, with ``feature_dim`` channels.
    """

    name: str
    input_spec: InputSpec
    feature_dim: int
    level_dims: Mapping[str, int]
    # Keys of the published weight file that the feature extractor does not use (the ImageNet classifier).
    unused_weight_prefixes: tuple[str, ...] = ()
    width: float = 1.0  # channel-width multiplier; the class attributes above are the published sizes
    widths: tuple[float, ...] = (1.0,)  # the widths this backbone can be built with (``WIDTHS`` if it narrows)

    def __init__(self) -> None:
        super().__init__()
        self.weights_id = RANDOM_INIT

    def set_width(self, width: float) -> None:
        """Record ``width`` and the feature sizes it gives; a subclass calls this before building its layers."""
        check_width(width)
        self.width = width
        self.feature_dim = narrowed(type(self).feature_dim, width)
        self.level_dims = MappingProxyType(
            {level: narrowed(dim, width) for level, dim in type(self).level_dims.items()}
        )

    @property
    def level_names(self) -> tuple[str, ...]:
        return tuple(self.level_dims)

    def forward_levels(self, images: torch.Tensor) -> dict[str, torch.Tensor]:
        """Named intermediate feature maps (N, C, h, w), in ``level_names`` order."""
        raise NotImplementedError

    def forward(self, images: torch.Tensor) -> torch.Tensor:
        """The last feature map (N, feature_dim, h, w), unpooled."""
        return self.forward_levels(images)[self.level_names[-1]]

    def adapt_published_state_dict(self, state: dict[str, torch.Tensor]) -> dict[str, torch.Tensor]:
        """Turn the published file's layout into this module's; the default only drops unused keys."""
        return drop_keys_with_prefixes(state, self.unused_weight_prefixes)

    def load_published_weights(self, state: Mapping[str, torch.Tensor], weights_id: str) -> None:
        """Load a published state dict with ``strict=True`` after ``adapt_published_state_dict``."""
        self.published_module().load_state_dict(self.adapt_published_state_dict(dict(state)), strict=True)
        self.weights_id = weights_id

    def published_module(self) -> nn.Module:
        """The module whose state-dict keys equal the published file's (self, or a wrapped library model)."""
        return self


def check_width(width: float) -> None:
    if width not in WIDTHS:
        raise ValueError(f"width: expected one of {', '.join(map(str, WIDTHS))}, found {width!r}")


def narrowed(channels: int, width: float) -> int:
    """``channels`` scaled by ``width`` (one of ``WIDTHS``); every channel count of the three backbones is a
    multiple of 8, so the result is exact.

    >>> narrowed(192, 0.25), narrowed(1024, 1.0)
    (48, 1024)
    """
    check_width(width)
    scaled = channels * width
    if scaled != int(scaled):
        raise ValueError(f"width {width}: {channels} channels do not divide evenly")
    return int(scaled)


def drop_keys_with_prefixes(state: dict[str, torch.Tensor], prefixes: Iterable[str]) -> dict[str, torch.Tensor]:
    """``state`` without the keys that start with any of ``prefixes``."""
    prefixes = tuple(prefixes)
    return {key: value for key, value in state.items() if not key.startswith(prefixes)}
