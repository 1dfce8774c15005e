from collections import Counter

import numpy as np
import pytest

from dml_core.data.samplers import (
    SAMPLERS,
    PairedClassSampler,
    PKSampler,
    RandomBatchSampler,
    TwoStreamSampler,
    number_of_batches,
)
from dml_core.errors import InputError

# 30 classes of 1..11 images: uneven, and some smaller than K
LABELS = np.repeat(np.arange(100, 130), np.random.default_rng(0).integers(1, 12, size=30))


def _blocks(batch, k):
    return [batch[start : start + k] for start in range(0, len(batch), k)]


def test_registry_names():
    assert set(SAMPLERS) == {"random", "pk", "two_stream", "paired"}


@pytest.mark.parametrize(
    "make",
    [
        lambda seed: RandomBatchSampler(LABELS, 16, seed),
        lambda seed: PKSampler(LABELS, 4, 3, seed),
        lambda seed: TwoStreamSampler(LABELS, 4, 3, seed),
        lambda seed: PairedClassSampler(LABELS, 4, 3, seed),
    ],
)
def test_same_seed_and_epoch_give_the_same_batches(make):
    first, second = make(7), make(7)
    first.set_epoch(3)
    second.set_epoch(3)
    assert list(first) == list(second)
    second.set_epoch(4)
    assert list(first) != list(second)
    assert list(make(8)) != list(make(7))


def test_random_batches_cover_the_epoch_with_equal_sizes():
    sampler = RandomBatchSampler(LABELS, 16, seed=0)
    batches = list(sampler)
    assert len(batches) == len(sampler) == -(-len(LABELS) // 16)
    assert all(len(batch) == 16 and len(set(batch)) == 16 for batch in batches)
    assert set(np.concatenate(batches)) == set(range(len(LABELS)))


def test_pk_batches_have_p_distinct_classes_of_k_and_visit_every_image():
    sampler = PKSampler(LABELS, 4, 3, seed=1)
    batches = list(sampler)
    counts = np.bincount(LABELS - 100)
    assert len(batches) == len(sampler) == number_of_batches([-(-c // 3) for c in counts], 4)
    for batch in batches:
        blocks = _blocks(batch, 3)
        classes = [set(LABELS[block]) for block in blocks]
        assert len(blocks) == 4 and all(len(c) == 1 for c in classes)
        assert len(set.union(*classes)) == 4  # distinct classes
        for block in blocks:  # distinct images whenever the class has at least K
            if counts[LABELS[block[0]] - 100] >= 3:
                assert len(set(block)) == 3
    assert set(np.concatenate(batches)) == set(range(len(LABELS)))


def test_pk_handles_a_giant_class_with_exact_length():
    labels = np.array([0] * 40 + [1, 2, 3, 4])
    sampler = PKSampler(labels, 2, 2, seed=0)
    batches = list(sampler)
    assert len(batches) == len(sampler) == 20  # the giant class needs 20 chunks, one per batch
    assert all(len(set(labels[batch])) == 2 for batch in batches)
    assert set(np.concatenate(batches)) == set(range(len(labels)))


def test_too_many_classes_per_batch_is_refused():
    with pytest.raises(InputError, match=r"expected 1..30 classes per batch"):
        PKSampler(LABELS, 31, 2)


def test_two_stream_layout_and_interlacing():
    sampler = TwoStreamSampler(LABELS, 4, 3, seed=2, shuffled_pool_size=60)
    assert sampler.group_sizes == (12, 12) and (sampler.neat_size, sampler.shuffled_size) == (12, 12)
    pool_batches = len(sampler.pool_batches)
    assert pool_batches == 5 and pool_batches != len(sampler)
    iterations = []
    for epoch in range(3):
        sampler.set_epoch(epoch)
        epoch_batches = list(sampler)
        neat = [batch[:12] for batch in epoch_batches]
        assert set(np.concatenate(neat)) == set(range(len(LABELS)))  # the neat stream is a real epoch
        assert all(len({LABELS[p] for p in block}) == 1 for batch in neat for block in _blocks(batch, 3))
        iterations += epoch_batches
    shuffled = [tuple(batch[12:]) for batch in iterations]
    # Eq. 2: iteration l revisits iteration 1's shuffled batch while the neat batch differs
    for t in range(len(iterations) - pool_batches):
        assert shuffled[t] == shuffled[t + pool_batches]
        assert iterations[t][:12] != iterations[t + pool_batches][:12]
    assert len(set(shuffled)) == pool_batches
    pool = set(np.concatenate([batch.tolist() for batch in sampler.pool_batches]))
    assert len(pool) == 60  # every pool image is used, the last short batch wraps around


def test_two_stream_refuses_equal_stream_lengths():
    labels = np.repeat(np.arange(40), 3)  # 40 chunks -> 10 neat batches of 4 x 3
    with pytest.raises(InputError, match="would not interlace"):
        TwoStreamSampler(labels, 4, 3, seed=0, shuffled_pool_size=120)


def test_paired_batches_share_classes_in_order_and_a_covers_the_epoch():
    sampler = PairedClassSampler(LABELS, 4, 3, seed=3)
    batches = list(sampler)
    assert sampler.group_sizes == (12, 12)
    independent = 0
    for batch in batches:
        first, second = batch[:12], batch[12:]
        assert [LABELS[b[0]] for b in _blocks(first, 3)] == [LABELS[b[0]] for b in _blocks(second, 3)]
        assert all(len(set(LABELS[block])) == 1 for block in _blocks(second, 3))
        independent += first != second
    assert independent > len(batches) // 2
    assert set(np.concatenate([batch[:12] for batch in batches])) == set(range(len(LABELS)))


def test_classes_smaller_than_k_repeat_their_images():
    labels = np.array([0, 1, 1, 1, 2, 2, 2])
    batches = list(PKSampler(labels, 3, 3, seed=0))
    singleton_blocks = [block for batch in batches for block in _blocks(batch, 3) if labels[block[0]] == 0]
    assert singleton_blocks and all(block == [0, 0, 0] for block in singleton_blocks)
    assert Counter(np.concatenate(batches).tolist())[0] == 3 * len(singleton_blocks)
