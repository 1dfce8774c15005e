"""The prepared-data path's per-batch keys (positions, crop corners, flips) reach the device without blocking the
host: built on the host, in one tensor, copied from pinned memory asynchronously. ``torch.tensor(list,
device="cuda")`` copies from pageable memory, which waits until the GPU has run everything queued before it, so
the previous step's GPU time was booked as waiting for data."""

import numpy as np
import pytest
import torch

from dml_core.input_spec import IMAGENET_RGB
from dml_core.pipeline.batch_augment import BatchAugmentation
from dml_core.pipeline.image_cache import ImageCache
from dml_core.recipes.settings import TransformSettings


def _cache(sizes) -> ImageCache:
    generator = torch.Generator().manual_seed(0)
    blocks = [torch.randint(0, 256, (3 * h * w,), dtype=torch.uint8, generator=generator) for h, w in sizes]
    offsets = torch.tensor([0, *np.cumsum([len(block) for block in blocks])[:-1]], dtype=torch.int64)
    heights, widths = (torch.tensor(values, dtype=torch.int64) for values in zip(*sizes, strict=True))
    return ImageCache(torch.cat(blocks), offsets, heights, widths, np.zeros(len(sizes), dtype=np.int64))


@pytest.mark.parametrize("train_crop", ["random_crop", "random_resized_crop"])
def test_a_batch_builds_no_tensor_on_the_device_from_a_python_list(monkeypatch, train_crop):
    config = TransformSettings(resize_mode="squash", resize=20, crop_size=12, train_crop=train_crop)
    augment = BatchAugmentation(_cache([(20, 20), (20, 24), (22, 20)]), IMAGENET_RGB, config)
    expected = augment([0, 2, 1, 2], [5, 6, 7, 8])
    built_on_a_device = []
    for name in ("tensor", "as_tensor"):
        real = getattr(torch, name)

        def recording(data, *args, real=real, name=name, **kwargs):
            if kwargs.get("device") is not None:
                built_on_a_device.append(f"torch.{name}(..., device={kwargs['device']})")
            return real(data, *args, **kwargs)

        monkeypatch.setattr(torch, name, recording)
    assert torch.equal(augment([0, 2, 1, 2], [5, 6, 7, 8]), expected)
    assert built_on_a_device == []


def test_rows_go_to_a_gpu_pinned_and_asynchronously(monkeypatch):
    from dml_core.pipeline.batch_augment import host_rows_to_device

    calls = []
    monkeypatch.setattr(torch.Tensor, "pin_memory", lambda self: calls.append("pin") or self)
    monkeypatch.setattr(torch.Tensor, "to", lambda self, *args, **kwargs: calls.append((args, kwargs)) or self)
    keys = host_rows_to_device([[3, 1], [0, 1]], torch.device("cuda", 0))
    assert calls == ["pin", ((torch.device("cuda", 0),), {"non_blocking": True})]
    assert keys.dtype == torch.int64 and keys.tolist() == [[3, 1], [0, 1]]


def test_rows_stay_unpinned_for_the_cpu():
    from dml_core.pipeline.batch_augment import host_rows_to_device

    assert host_rows_to_device([[1, 2]], torch.device("cpu")).tolist() == [[1, 2]]
