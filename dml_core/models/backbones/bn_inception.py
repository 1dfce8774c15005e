"""BN-Inception (Inception v2, Ioffe & Szegedy 2015), laid out like the Caffe port the DML field uses.

No mainstream library ships it. The ImageNet weights everybody loads are ``bn_inception-52deb4733.pth`` (Caffe
port published with Cadene's ``pretrainedmodels``). This implementation names every convolution and BatchNorm
exactly as that file does (``inception_3a_double_3x3_1`` and ``inception_3a_double_3x3_1_bn``: a flat
namespace, as in the Caffe prototxt), so the file loads with ``strict=True``. Caffe details kept:
convolutions with bias before BN, ``ceil_mode`` pooling, average pooling that counts padding, max pooling
in the 5b pool branch.

Input: BGR, 0-255, mean (104, 117, 128) subtracted (``CAFFE_BGR``). Any input of 32 px or more works: the
final map is 7x7 at 224 px, 2x2 at 64 px.
"""

from __future__ import annotations

from dataclasses import dataclass
from types import MappingProxyType

import torch
import torch.nn.functional as F
from torch import nn

from dml_core.input_spec import CAFFE_BGR
from dml_core.models.backbones.base import WIDTHS, Backbone, drop_keys_with_prefixes, narrowed


@dataclass(frozen=True)
class InceptionSpec:
    """Channel widths of one Inception module; ``stride2`` marks the grid-reduction modules (3c, 4e)."""

    name: str
    in_channels: int
    branch_1x1: int  # 0: no 1x1 branch (grid-reduction modules)
    branch_3x3: tuple[int, int]  # (reduce, out)
    branch_double_3x3: tuple[int, int]  # (reduce, out), two 3x3 convolutions
    pool: str  # "avg", "max" (stride 1) or "max_stride2" (grid reduction, no projection)
    pool_proj: int  # 0: the pooled input is concatenated as it is

    @property
    def stride2(self) -> bool:
        return self.pool == "max_stride2"

    @property
    def out_channels(self) -> int:
        pooled = self.pool_proj if self.pool_proj else self.in_channels
        return self.branch_1x1 + self.branch_3x3[1] + self.branch_double_3x3[1] + pooled


# The network table of the BN-Inception paper (Table 1), with the Caffe port's module names.
INCEPTION_MODULES = (
    InceptionSpec("inception_3a", 192, 64, (64, 64), (64, 96), "avg", 32),
    InceptionSpec("inception_3b", 256, 64, (64, 96), (64, 96), "avg", 64),
    InceptionSpec("inception_3c", 320, 0, (128, 160), (64, 96), "max_stride2", 0),
    InceptionSpec("inception_4a", 576, 224, (64, 96), (96, 128), "avg", 128),
    InceptionSpec("inception_4b", 576, 192, (96, 128), (96, 128), "avg", 128),
    InceptionSpec("inception_4c", 576, 160, (128, 160), (128, 160), "avg", 128),
    InceptionSpec("inception_4d", 608, 96, (128, 192), (160, 192), "avg", 128),
    InceptionSpec("inception_4e", 608, 0, (128, 192), (192, 256), "max_stride2", 0),
    InceptionSpec("inception_5a", 1056, 352, (192, 320), (160, 224), "avg", 128),
    InceptionSpec("inception_5b", 1024, 352, (192, 320), (192, 224), "max", 128),
)

# Each level is the output of the last module of a stage: the maps gpw's multi-level fusion taps.
LEVEL_ENDS = {"inception3": "inception_3c", "inception4": "inception_4e", "inception5": "inception_5b"}


class BNInception(Backbone):
    """BN-Inception feature extractor; ``forward`` gives the inception_5b map (N, 1024 x width, h, w)."""

    name = "bn_inception"
    input_spec = CAFFE_BGR
    feature_dim = 1024
    level_dims = MappingProxyType({"inception3": 576, "inception4": 1056, "inception5": 1024})
    widths = WIDTHS
    # The published file also holds the 1000-way ImageNet classifier.
    unused_weight_prefixes = ("last_linear.",)

    def __init__(self, width: float = 1.0) -> None:
        """``width`` < 1: every channel count scaled by it (``base.WIDTHS``), the same layers otherwise."""
        super().__init__()
        self.set_width(width)
        self._conv_bn("conv1_7x7_s2", 3, 64, kernel_size=7, stride=2, narrow_input=False)
        self._conv_bn("conv2_3x3_reduce", 64, 64, kernel_size=1)
        self._conv_bn("conv2_3x3", 64, 192, kernel_size=3)
        for spec in INCEPTION_MODULES:
            self._inception_module(spec)

    def _conv_bn(
        self, name: str, in_channels: int, out_channels: int, kernel_size: int, stride: int = 1, narrow_input=True
    ) -> None:
        # Registered as attributes ``name`` and ``name_bn``: the Caffe port's flat key names. Channel counts are
        # the published ones, narrowed here (the RGB input never is).
        in_channels = narrowed(in_channels, self.width) if narrow_input else in_channels
        out_channels = narrowed(out_channels, self.width)
        conv = nn.Conv2d(in_channels, out_channels, kernel_size, stride=stride, padding=kernel_size // 2)
        self.add_module(name, conv)
        self.add_module(f"{name}_bn", nn.BatchNorm2d(out_channels))

    def _conv_bn_relu(self, name: str, inputs: torch.Tensor) -> torch.Tensor:
        return F.relu(getattr(self, f"{name}_bn")(getattr(self, name)(inputs)))

    def _inception_module(self, spec: InceptionSpec) -> None:
        stride = 2 if spec.stride2 else 1
        if spec.branch_1x1:
            self._conv_bn(f"{spec.name}_1x1", spec.in_channels, spec.branch_1x1, kernel_size=1)
        reduce, out = spec.branch_3x3
        self._conv_bn(f"{spec.name}_3x3_reduce", spec.in_channels, reduce, kernel_size=1)
        self._conv_bn(f"{spec.name}_3x3", reduce, out, kernel_size=3, stride=stride)
        reduce, out = spec.branch_double_3x3
        self._conv_bn(f"{spec.name}_double_3x3_reduce", spec.in_channels, reduce, kernel_size=1)
        self._conv_bn(f"{spec.name}_double_3x3_1", reduce, out, kernel_size=3)
        self._conv_bn(f"{spec.name}_double_3x3_2", out, out, kernel_size=3, stride=stride)
        if spec.pool_proj:
            self._conv_bn(f"{spec.name}_pool_proj", spec.in_channels, spec.pool_proj, kernel_size=1)

    def _run_inception_module(self, spec: InceptionSpec, inputs: torch.Tensor) -> torch.Tensor:
        name = spec.name
        branches = []
        if spec.branch_1x1:
            branches.append(self._conv_bn_relu(f"{name}_1x1", inputs))
        branches.append(self._conv_bn_relu(f"{name}_3x3", self._conv_bn_relu(f"{name}_3x3_reduce", inputs)))
        double = self._conv_bn_relu(f"{name}_double_3x3_reduce", inputs)
        double = self._conv_bn_relu(f"{name}_double_3x3_1", double)
        branches.append(self._conv_bn_relu(f"{name}_double_3x3_2", double))
        if spec.pool == "avg":  # Caffe averages over the padded window: count_include_pad
            pooled = F.avg_pool2d(inputs, 3, stride=1, padding=1, ceil_mode=True, count_include_pad=True)
        elif spec.pool == "max":
            pooled = F.max_pool2d(inputs, 3, stride=1, padding=1, ceil_mode=True)
        else:
            pooled = F.max_pool2d(inputs, 3, stride=2, ceil_mode=True)
        branches.append(self._conv_bn_relu(f"{name}_pool_proj", pooled) if spec.pool_proj else pooled)
        return torch.cat(branches, dim=1)

    def forward_levels(self, images: torch.Tensor) -> dict[str, torch.Tensor]:
        x = self._conv_bn_relu("conv1_7x7_s2", images)
        x = F.max_pool2d(x, 3, stride=2, ceil_mode=True)
        x = self._conv_bn_relu("conv2_3x3_reduce", x)
        x = self._conv_bn_relu("conv2_3x3", x)
        x = F.max_pool2d(x, 3, stride=2, ceil_mode=True)
        levels = {}
        level_of_module = {module: level for level, module in LEVEL_ENDS.items()}
        for spec in INCEPTION_MODULES:
            x = self._run_inception_module(spec, x)
            if spec.name in level_of_module:
                levels[level_of_module[spec.name]] = x
        return levels

    def adapt_published_state_dict(self, state: dict[str, torch.Tensor]) -> dict[str, torch.Tensor]:
        """Drop the classifier and accept the Caffe port's legacy layouts.

        Older exports of this file store BN parameters and statistics as (1, C) and predate BatchNorm's
        ``num_batches_tracked`` counter: (1, C) becomes (C,) where this module holds a (C,) tensor, and a
        missing counter is set to 0 (it only matters for ``momentum=None``). Every other key must match.
        """
        state = drop_keys_with_prefixes(state, self.unused_weight_prefixes)
        own = self.state_dict()
        for key, target in own.items():
            value = state.get(key)
            if value is not None and target.dim() == 1 and tuple(value.shape) == (1, target.shape[0]):
                state[key] = value.reshape(target.shape)
            if value is None and key.endswith(".num_batches_tracked"):
                state[key] = torch.zeros_like(target)
        return state
