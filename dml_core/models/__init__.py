"""Models: backbones with their weights and input conventions, pooling, heads, freezing, parameter groups.

backbone = build_backbone("bn_inception", weights="pretrained")   # or a path, or "random"
model = EmbeddingModel(backbone, "avg", LinearEmbedding(backbone.feature_dim, 512), frozen_bn=True)
optimizer = torch.optim.Adam(parameter_groups(model, lr=1e-5, new_layer_lr_multiplier=10))

It may import ``data`` (input conventions, the glyph sets of the mini tier's pretrained start) and the top-level
helpers; training, the runner, the commands and the GPU check import it.
"""

from dml_core.models.backbones import BACKBONES, PRETRAINED, RANDOM, Backbone, build_backbone
from dml_core.models.embedding_model import EmbeddingModel
from dml_core.models.freezing import BackboneWarmup, freeze_batchnorm
from dml_core.models.heads import HEADS, LinearEmbedding, MultiLevelFusionHead, RelationalHead, RelationalOutput
from dml_core.models.param_groups import parameter_groups
from dml_core.models.pooling import POOLING_MODES, GlobalPool, global_pool

__all__ = [
    "BACKBONES",
    "HEADS",
    "POOLING_MODES",
    "PRETRAINED",
    "RANDOM",
    "Backbone",
    "BackboneWarmup",
    "EmbeddingModel",
    "GlobalPool",
    "LinearEmbedding",
    "MultiLevelFusionHead",
    "RelationalHead",
    "RelationalOutput",
    "build_backbone",
    "freeze_batchnorm",
    "global_pool",
    "parameter_groups",
]
