"""Batch order and augmentation seeds are functions of (seed, epoch, batch, slot): resumable exactly."""

import torch

from dml_core.data import PKSampler
from dml_core.pipeline.seeded_batches import EpochSlice, SeededDataset, augmentation_seeds


def _sampler():
    return PKSampler([c for c in range(6) for _ in range(5)], classes_per_batch=3, images_per_class=2, seed=4)


def test_a_slice_from_batch_b_equals_the_tail_of_the_whole_epoch():
    whole = list(EpochSlice(_sampler(), epoch=2, start=0, seed=9))
    tail = list(EpochSlice(_sampler(), epoch=2, start=3, seed=9))
    assert tail == whole[3:]
    assert len(EpochSlice(_sampler(), epoch=2, start=3, seed=9)) == len(whole) - 3


def test_seeds_differ_across_batches_epochs_and_slots():
    a, b = augmentation_seeds(0, 0, 0, 4), augmentation_seeds(0, 0, 1, 4)
    assert len(set(a)) == 4 and not set(a) & set(b)
    assert augmentation_seeds(0, 1, 0, 4) != a
    assert augmentation_seeds(0, 0, 0, 4) == a


class _Noise(torch.utils.data.Dataset):
    def __len__(self):
        return 3

    def __getitem__(self, i):
        return torch.rand(2)


def test_seeded_dataset_is_a_pure_function_of_the_key_and_leaves_the_global_rng_alone():
    data = SeededDataset(_Noise())
    torch.manual_seed(1)
    before = torch.get_rng_state()
    first = data[(0, 123)]
    assert torch.equal(torch.get_rng_state(), before)
    assert torch.equal(data[(0, 123)], first)
    assert not torch.equal(data[(0, 124)], first)
