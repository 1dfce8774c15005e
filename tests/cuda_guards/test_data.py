"""The samplers and the cache pipeline's batch augmentation run on the CPU under the CUDA guard."""

import numpy as np
import pytest
import torch
from torch.utils._python_dispatch import TorchDispatchMode
from torchvision.transforms import v2

from dml_core.data.samplers import SAMPLERS
from dml_core.input_spec import CAFFE_BGR, IMAGENET_RGB
from dml_core.pipeline.batch_augment import BatchAugmentation
from dml_core.pipeline.image_cache import ImageCache
from dml_core.recipes.settings import TransformSettings
from tests.cuda_guards.cuda_kernels import CudaGuard

LABELS = np.repeat(np.arange(6), 5)
SAMPLER_ARGS = {
    "random": {"batch_size": 8},
    "pk": {"classes_per_batch": 2, "images_per_class": 3},
    "two_stream": {"classes_per_batch": 2, "images_per_class": 3, "shuffled_pool_size": "all"},
    "paired": {"classes_per_batch": 2, "images_per_class": 2, "avoid_repeats": True},
}
# torchvision's resize keeps uint8 only for a CPU tensor (its _do_native_uint8_resize_on_cpu); on any other device it
# resizes in float32, which CUDA has. test_torchvision_resizes_in_float32_off_the_cpu shows it.
CPU_ONLY_RESIZE = {("_upsample_bilinear2d_aa", "uint8"): "torchvision resizes uint8 natively on the CPU only"}


def test_every_sampler_is_guarded():
    assert set(SAMPLER_ARGS) == set(SAMPLERS)


@pytest.mark.parametrize("name", sorted(SAMPLER_ARGS))
def test_samplers_run_as_cuda_would(name):
    with CudaGuard():
        sampler = SAMPLERS[name](LABELS, seed=3, **SAMPLER_ARGS[name])
        sampler.set_epoch(1)
        batches = list(sampler)
    assert len(batches) == len(sampler) > 0 and all(len(batch) == sum(sampler.group_sizes) for batch in batches)


def _cache() -> ImageCache:
    """Three uint8 images of different sizes, back to back, as ``image_cache`` lays them out."""
    sizes = [(40, 44), (42, 40), (48, 41)]
    generator = torch.Generator().manual_seed(0)
    pixels = torch.randint(0, 256, (sum(3 * h * w for h, w in sizes),), dtype=torch.uint8, generator=generator)
    offsets = torch.tensor(np.cumsum([0] + [3 * h * w for h, w in sizes])[:-1])
    heights, widths = (torch.tensor(column) for column in zip(*sizes, strict=True))
    return ImageCache(pixels, offsets, heights, widths, np.array([0, 1, 1]))


@pytest.mark.parametrize(
    ("config", "spec"),
    [
        (TransformSettings(resize_mode="squash", resize=40, train_crop="random_crop", crop_size=32), CAFFE_BGR),
        (TransformSettings(resize=40, crop_size=24, train_crop="random_resized_crop"), IMAGENET_RGB),
    ],
)
def test_batch_augmentation_runs_as_cuda_would(config, spec):
    with CudaGuard(allow=CPU_ONLY_RESIZE):
        augment = BatchAugmentation(_cache(), spec, config)
        batch = augment([0, 2, 1, 2], [5, 6, 7, 8])
    assert batch.shape == (4, 3, config.crop_size, config.crop_size) and batch.dtype == torch.float32


class _ResizeDtypes(TorchDispatchMode):
    def __init__(self) -> None:
        super().__init__()
        self.dtypes: list[torch.dtype] = []

    def __torch_dispatch__(self, func, types, args=(), kwargs=None):
        if func.overloadpacket.__name__ == "_upsample_bilinear2d_aa":
            self.dtypes.append(args[0].dtype)
        return func(*args, **(kwargs or {}))


@pytest.mark.parametrize(("device", "dtype"), [("cpu", torch.uint8), ("meta", torch.float32)])
def test_torchvision_resizes_in_float32_off_the_cpu(device, dtype):
    # The meta device stands in for CUDA: torchvision's branch asks only whether the tensor is on the CPU.
    image = torch.zeros(3, 40, 44, dtype=torch.uint8, device=device)
    with _ResizeDtypes() as seen:
        out = v2.functional.resized_crop(image, 2, 3, 30, 31, [24, 24], antialias=True)
    assert seen.dtypes == [dtype] and out.dtype == torch.uint8
