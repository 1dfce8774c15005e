"""BN-Inception against its oracle, pretrainedmodels' ``bninception(pretrained=None)`` (test-only dep)."""

from __future__ import annotations

import pytest
import torch

from dml_core.input_spec import CAFFE_BGR
from dml_core.models.backbones.bn_inception import BNInception

CLASSIFIER_KEYS = {"last_linear.weight", "last_linear.bias"}


@pytest.fixture(scope="module")
def reference() -> torch.nn.Module:
    """The oracle network, with BN statistics and affine parameters randomised so parity is not trivial."""
    pretrainedmodels = pytest.importorskip("pretrainedmodels")
    torch.manual_seed(1)
    model = pretrainedmodels.bninception(pretrained=None)
    with torch.no_grad():
        for layer in model.modules():
            if isinstance(layer, torch.nn.BatchNorm2d):
                layer.running_mean.uniform_(-1, 1)
                layer.running_var.uniform_(0.5, 2)
                layer.weight.uniform_(0.5, 1.5)
                layer.bias.uniform_(-0.5, 0.5)
    return model.eval()


@pytest.fixture(scope="module")
def loaded(reference: torch.nn.Module) -> BNInception:
    ours = BNInception()
    ours.load_published_weights(reference.state_dict(), "oracle weights")
    return ours.eval()


def test_state_dict_keys_and_shapes_equal_the_caffe_port_without_its_classifier(reference):
    theirs = reference.state_dict()
    ours = BNInception().state_dict()
    assert set(theirs) - set(ours) == CLASSIFIER_KEYS
    assert set(ours) <= set(theirs)
    assert list(ours) == [key for key in theirs if key not in CLASSIFIER_KEYS]  # same order too
    assert {key: tuple(value.shape) for key, value in ours.items()} == {key: tuple(theirs[key].shape) for key in ours}


@pytest.mark.parametrize(("size", "grid"), [(224, 7), (96, 3), (64, 2)])
def test_outputs_equal_the_oracle_features_at_full_and_smoke_sizes(reference, loaded, size, grid):
    images = torch.randn(2, 3, size, size) * 60  # the 0-255, mean-subtracted range of CAFFE_BGR
    with torch.no_grad():
        expected = reference.features(images)
        actual = loaded(images)
    assert actual.shape == (2, 1024, grid, grid)
    torch.testing.assert_close(actual, expected, rtol=0, atol=0)


def test_levels_are_the_inception3_4_5_stage_outputs(loaded):
    with torch.no_grad():
        levels = loaded.forward_levels(torch.randn(1, 3, 224, 224))
    assert {name: tuple(value.shape) for name, value in levels.items()} == {
        "inception3": (1, 576, 14, 14),
        "inception4": (1, 1056, 7, 7),
        "inception5": (1, 1024, 7, 7),
    }
    assert loaded.level_dims == {name: value.shape[1] for name, value in levels.items()}


def test_declares_the_caffe_input_convention():
    assert BNInception.input_spec == CAFFE_BGR
    assert BNInception.feature_dim == 1024


def test_legacy_export_with_1xC_batchnorm_tensors_and_no_counter_loads(reference, loaded):
    legacy = {
        key: value.unsqueeze(0) if key.split(".")[0].endswith("_bn") else value
        for key, value in reference.state_dict().items()
        if not key.endswith("num_batches_tracked")
    }
    assert legacy["conv1_7x7_s2_bn.running_var"].shape == (1, 64)
    model = BNInception()
    model.load_published_weights(legacy, "legacy")
    images = torch.randn(1, 3, 64, 64) * 60
    with torch.no_grad():
        torch.testing.assert_close(model.eval()(images), loaded(images), rtol=0, atol=0)
    assert model.weights_id == "legacy"


def test_a_state_dict_of_another_network_is_refused():
    wrong = BNInception().state_dict()
    wrong["conv1_7x7_s2.weight"] = torch.zeros(64, 3, 5, 5)
    with pytest.raises(RuntimeError, match=r"conv1_7x7_s2\.weight"):
        BNInception().load_published_weights(wrong, "wrong")
    missing = {key: value for key, value in wrong.items() if not key.startswith("inception_5b")}
    with pytest.raises(RuntimeError, match="Missing key"):
        BNInception().load_published_weights(missing, "missing")
