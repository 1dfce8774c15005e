"""EmbeddingModel: output shapes at 224 px and smoke sizes, level routing, weights identity."""

from __future__ import annotations

import pytest
import torch

from dml_core.input_spec import CAFFE_BGR
from dml_core.models import (
    EmbeddingModel,
    LinearEmbedding,
    MultiLevelFusionHead,
    RelationalHead,
    build_backbone,
)
from dml_core.models.weights import RANDOM_INIT


@pytest.fixture(scope="module")
def bn_inception():
    return build_backbone("bn_inception", weights="random")


@pytest.mark.parametrize("size", [224, 64])
@pytest.mark.parametrize("pooling", ["avg", "max", "avg+max"])
def test_linear_embedding_model_shapes(bn_inception, size, pooling):
    model = EmbeddingModel(bn_inception, pooling, LinearEmbedding(1024, 512)).eval()
    with torch.no_grad():
        embedding = model.embed(torch.randn(2, 3, size, size))
    assert embedding.shape == (2, 512)
    torch.testing.assert_close(embedding.norm(dim=1), torch.ones(2))
    assert model.input_spec == CAFFE_BGR
    assert model.weights_id == RANDOM_INIT


@pytest.mark.parametrize("size", [224, 96])
def test_gpw_fusion_on_bn_inception_levels(bn_inception, size):
    head = MultiLevelFusionHead({level: bn_inception.level_dims[level] for level in bn_inception.level_names}, 32)
    model = EmbeddingModel(bn_inception, "avg", head).eval()
    images = torch.randn(2, 3, size, size)
    with torch.no_grad():
        embedding = model(images)
        levels = bn_inception.forward_levels(images)
        expected = head({level: value.mean(dim=(2, 3)) for level, value in levels.items()})
    assert embedding.shape == (2, 96)
    torch.testing.assert_close(embedding, expected)


@pytest.mark.parametrize("name", ["resnet50", "googlenet"])
def test_relational_head_on_other_backbones_at_smoke_size(name):
    backbone = build_backbone(name, weights="random")
    model = EmbeddingModel(backbone, "avg+max", RelationalHead(backbone.feature_dim, 4, 16)).eval()
    with torch.no_grad():
        output = model(torch.randn(2, 3, 64, 64))
    assert output.embedding.shape == (2, 64)
    assert output.reconstruction_error.shape == (2, 4)
    assert model.embed(torch.randn(2, 3, 64, 64)).shape == (2, 64)


def test_a_head_reading_levels_the_backbone_lacks_is_refused(bn_inception):
    with pytest.raises(ValueError, match="layer3"):
        EmbeddingModel(bn_inception, "avg", MultiLevelFusionHead({"layer3": 1024}, 8))
