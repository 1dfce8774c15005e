"""Global pooling modes on hand-computed maps."""

from __future__ import annotations

import doctest

import pytest
import torch

from dml_core.errors import InputError
from dml_core.models import pooling
from dml_core.models.pooling import GlobalPool


def test_doctests():
    assert doctest.testmod(pooling).failed == 0


def test_modes_per_channel():
    feature_map = torch.tensor([[[[0.0, 4.0], [-2.0, 2.0]], [[1.0, 1.0], [1.0, 5.0]]]])  # (1, 2, 2, 2)
    assert GlobalPool("avg")(feature_map).tolist() == [[1.0, 2.0]]
    assert GlobalPool("max")(feature_map).tolist() == [[4.0, 5.0]]
    assert GlobalPool("avg+max")(feature_map).tolist() == [[5.0, 7.0]]  # a sum: size stays C


def test_unknown_mode_is_refused():
    with pytest.raises(
        InputError, match=r"^field model\.pooling: unknown pooling 'gem'; expected one of avg, avg\+max, max$"
    ):
        GlobalPool("gem")
