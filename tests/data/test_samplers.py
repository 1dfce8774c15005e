from collections import Counter

import numpy as np
import pytest

from dml_core.data.class_samplers import EpochBatchSampler
from dml_core.data.samplers import (
    SAMPLERS,
    PairedClassSampler,
    PKSampler,
    RandomBatchSampler,
    TwoStreamSampler,
    declared_samplers,
    number_of_batches,
    sampler_record,
)
from dml_core.errors import InputError

# 30 classes of 1..11 images: uneven, and some smaller than K
LABELS = np.repeat(np.arange(100, 130), np.random.default_rng(0).integers(1, 12, size=30))


def _blocks(batch, k):
    return [batch[start : start + k] for start in range(0, len(batch), k)]


def test_registry_names():
    assert set(SAMPLERS) == {"random", "pk", "two_stream", "paired"}


def test_a_sampler_is_registered_under_the_name_its_class_declares():
    """The name is written once, on the class: the registry collects every subclass that declares one, and only
    those (a shared base without a name is no sampler a recipe may name)."""
    assert all(cls.name == name and "name" in vars(cls) for name, cls in SAMPLERS.items())

    class SharedBase(EpochBatchSampler):
        pass

    class Mine(SharedBase):
        name = "mine"

    class Narrower(Mine):
        name = "narrower"

    assert declared_samplers(SharedBase) == [Mine, Narrower]


@pytest.mark.parametrize(
    ("name", "params", "makeup"),
    [
        ("pk", {"classes_per_batch": 16, "images_per_class": 5}, "PK 16×5"),
        ("paired", {"classes_per_batch": 6, "images_per_class": 5}, "2 draws of 6×5"),
        ("two_stream", {"classes_per_batch": 6, "images_per_class": 5}, "6×5 + 30 shuffled"),
        ("random", {"batch_size": 120}, "random 120"),
    ],
)
def test_each_sampler_says_what_its_batch_holds(name, params, makeup):
    assert SAMPLERS[name].batch_makeup(params) == makeup


@pytest.mark.parametrize(
    "make",
    [
        lambda seed: RandomBatchSampler(LABELS, 16, seed),
        lambda seed: PKSampler(LABELS, 4, 3, seed),
        lambda seed: TwoStreamSampler(LABELS, 4, 3, seed),
        lambda seed: PairedClassSampler(LABELS, 4, 3, seed),
        lambda seed: TwoStreamSampler(LABELS, 4, 3, seed, shuffled_pool_size="all", reshuffle_pool=True),
        lambda seed: PairedClassSampler(LABELS, 4, 3, seed, avoid_repeats=True, min_class_size=3),
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


# CUB-like: 100 classes of 60 images; SOP-like: 2,000 classes of 2-12 images (more small ones, mean 5.3 as SOP's)
CUB_LIKE = np.repeat(np.arange(100), 60)
SOP_SIZES = np.random.default_rng(1).choice(
    np.arange(2, 13), size=2000, p=0.83 ** np.arange(11) / (0.83 ** np.arange(11)).sum()
)
SOP_LIKE = np.repeat(np.arange(2000), SOP_SIZES)


def paired_repeats(sampler: PairedClassSampler, labels: np.ndarray) -> dict[str, float]:
    """Over one epoch, as shares of B's slots: B's images that are also in A ("across"), slots of A and of B
    that repeat an image of the same block ("within_a", "within_b"), and how many more of B's images are in A
    than the class's size forces (n minus the images A left; "avoidable")."""
    counts = np.bincount(labels)
    n = sampler.k
    across = within_a = within_b = avoidable = slots = 0
    for batch in sampler:
        half = len(batch) // 2
        for a, b in zip(_blocks(batch[:half], n), _blocks(batch[half:], n), strict=True):
            shared = sum(image in set(a) for image in b)
            across += shared
            within_a += n - len(set(a))
            within_b += n - len(set(b))
            avoidable += shared - max(0, n - (counts[labels[a[0]]] - len(set(a))))  # B's slots beyond the images A left
            slots += n
    return {
        key: value / slots
        for key, value in {"across": across, "within_a": within_a, "within_b": within_b, "avoidable": avoidable}.items()
    }


def test_the_papers_single_minibatch_is_a_pk_batch_of_13_x_10():
    sampler = PKSampler(CUB_LIKE, 13, 10, seed=0)
    for batch in sampler:
        assert len(batch) == 130 and len(set(batch)) == 130  # distinct: every class has 60 images
        assert [len(set(CUB_LIKE[block])) for block in _blocks(batch, 10)] == [1] * 13
        assert len({CUB_LIKE[block[0]] for block in _blocks(batch, 10)}) == 13


def test_paired_draws_on_cub_sized_classes_repeat_a_sixth_independently_and_none_when_avoiding():
    independent = paired_repeats(PairedClassSampler(CUB_LIKE, 13, 10, seed=0), CUB_LIKE)
    assert independent["across"] == pytest.approx(10 / 60, abs=0.02)  # n / class size, as Proposition 1 draws
    assert independent["within_a"] == independent["within_b"] == 0
    avoiding = paired_repeats(PairedClassSampler(CUB_LIKE, 13, 10, seed=0, avoid_repeats=True), CUB_LIKE)
    assert avoiding == {"across": 0, "within_a": 0, "within_b": 0, "avoidable": 0}


def test_paired_draws_on_sop_sized_classes_share_only_what_the_class_size_forces():
    independent = paired_repeats(PairedClassSampler(SOP_LIKE, 13, 10, seed=0), SOP_LIKE)
    avoiding = paired_repeats(PairedClassSampler(SOP_LIKE, 13, 10, seed=0, avoid_repeats=True), SOP_LIKE)
    # no class has the 20 images two disjoint draws of 10 need: B is nearly all A's images either way, and
    # classes of fewer than 10 repeat images within A and within B
    assert independent["across"] > 0.9 and independent["within_a"] > 0.3
    assert avoiding["avoidable"] == 0 < independent["avoidable"]  # each block shares the fewest its class allows
    assert avoiding["within_a"] == pytest.approx(independent["within_a"])
    # only classes with enough images: none repeated within A or B (10), none shared either (2 x 5)
    only_large = paired_repeats(PairedClassSampler(SOP_LIKE, 13, 10, seed=0, min_class_size=10), SOP_LIKE)
    assert only_large["within_a"] == only_large["within_b"] == 0
    disjoint = PairedClassSampler(SOP_LIKE, 13, 5, seed=0, avoid_repeats=True, min_class_size=10)
    assert paired_repeats(disjoint, SOP_LIKE) == {"across": 0, "within_a": 0, "within_b": 0, "avoidable": 0}


def test_min_class_size_keeps_only_large_classes_and_their_epoch():
    sampler = PKSampler(LABELS, 4, 3, seed=0, min_class_size=5)
    counts = np.bincount(LABELS - 100)
    kept = {label for label in set(LABELS) if counts[label - 100] >= 5}
    batches = list(sampler)
    assert {LABELS[p] for batch in batches for p in batch} == kept
    assert set(np.concatenate(batches)) == set(np.flatnonzero(np.isin(LABELS, list(kept))))
    assert all(len(set(block)) == 3 for batch in batches for block in _blocks(batch, 3))
    with pytest.raises(InputError, match="min_class_size 12 leaves no class"):
        PKSampler(LABELS, 4, 3, min_class_size=12)
    with pytest.raises(InputError, match=r"expected 1..\d+ classes per batch"):
        PKSampler(LABELS, 29, 3, min_class_size=5)


def shuffled_images(sampler: TwoStreamSampler, epochs: int) -> set[int]:
    """The distinct images the shuffled stream shows over ``epochs`` epochs."""
    seen: set[int] = set()
    for epoch in range(epochs):
        sampler.set_epoch(epoch)
        seen.update(image for batch in sampler for image in batch[sampler.neat_size :])
    return seen


def test_the_whole_pool_shows_every_training_image_in_one_epoch_the_half_pool_half():
    labels = np.repeat(np.arange(100), 50)  # CUB-like: 5,000 images, neat batches of 12 x 5
    whole = TwoStreamSampler(labels, 12, 5, seed=0, shuffled_pool_size="all", reshuffle_pool=True)
    half = TwoStreamSampler(labels, 12, 5, seed=0)
    assert len(shuffled_images(whole, 1)) == 5000
    assert len(shuffled_images(half, 1)) == len(shuffled_images(half, 3)) == 2500


def test_a_reshuffled_pool_gives_each_pass_new_batches_with_every_pool_image_once():
    sampler = TwoStreamSampler(LABELS, 4, 3, seed=2, shuffled_pool_size=60, reshuffle_pool=True)
    passes = [sampler.pass_batches(index) for index in range(3)]
    for batches in passes:
        assert len(batches) == 5 and all(len(batch) == 12 and len(set(batch)) == 12 for batch in batches)
        assert set(np.concatenate(batches)) == set(sampler.pool)
    assert [b.tolist() for b in passes[0]] != [b.tolist() for b in passes[1]]
    # the stream is the passes laid end to end, whatever epoch it is read from (resumable)
    stream = []
    for epoch in (2, 0, 1):  # built in any order
        sampler.set_epoch(epoch)
        stream.append([batch[12:] for batch in sampler])
    laid_out = [stream[1], stream[2], stream[0]]
    flat = [batch for epoch in laid_out for batch in epoch]
    expected = [batch.tolist() for index in range(-(-len(flat) // 5)) for batch in sampler.pass_batches(index)]
    assert flat == expected[: len(flat)]
    # an equal number of pool and neat batches no longer locks the pairing when the pool is reshuffled
    TwoStreamSampler(np.repeat(np.arange(40), 3), 4, 3, seed=0, shuffled_pool_size=120, reshuffle_pool=True)
    expected_sizes = r"expected 12..\d+ \(one batch to the whole split\), 'all' or 'all_interlaced', found 'half'"
    with pytest.raises(InputError, match=expected_sizes):
        TwoStreamSampler(LABELS, 4, 3, shuffled_pool_size="half")


def test_an_interlaced_whole_pool_leaves_out_one_batch_only_where_the_periods_would_be_equal():
    labels = np.repeat(np.arange(24), 5)  # 120 images: 2 neat batches of 12 x 5, and the whole pool 2 batches of 60
    with pytest.raises(InputError, match="interlace"):
        TwoStreamSampler(labels, 12, 5, seed=0, shuffled_pool_size="all")
    sampler = TwoStreamSampler(labels, 12, 5, seed=0, shuffled_pool_size="all_interlaced")
    assert (len(sampler.pool), len(sampler.pool_batches), len(sampler.neat)) == (60, 1, 2)
    larger = np.repeat(np.arange(24), 6)  # 144 images: 3 pool batches against 4 neat ones, the whole pool kept
    sampler = TwoStreamSampler(larger, 12, 5, seed=0, shuffled_pool_size="all_interlaced")
    assert (len(sampler.pool), len(sampler.pool_batches), len(sampler.neat)) == (144, 3, 4)


def test_a_samplers_record_names_every_setting_its_batches_depend_on():
    # damlrrm's default half pool and its cycled whole pool draw other shuffled batches: the record tells them apart,
    # though the recipe of the first names no pool at all
    labels = np.repeat(np.arange(30), 5)
    params = {"classes_per_batch": 4, "images_per_class": 3}
    cycled = {**params, "shuffled_pool_size": "all_interlaced", "reshuffle_pool": False}
    half, whole = (sampler_record("two_stream", p, TwoStreamSampler(labels, seed=1, **p)) for p in (params, cycled))
    assert half["settings"] == {**params, "shuffled_pool_size": None, "reshuffle_pool": False}
    assert (half["derived"]["pool_images"], whole["derived"]["pool_images"]) == (75, 150)
    assert whole["settings"] == cycled and half["seed"] == whole["seed"] == 1
    half_batches = [batch[12:] for batch in TwoStreamSampler(labels, seed=1, **params)]
    whole_batches = [batch[12:] for batch in TwoStreamSampler(labels, seed=1, **cycled)]
    assert half_batches != whole_batches
    pk = sampler_record("pk", params, PKSampler(labels, seed=0, **params))
    assert pk == {"name": "pk", "seed": 0, "settings": {**params, "min_class_size": 1}, "derived": {}}
