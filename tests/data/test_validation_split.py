"""The class-disjoint validation split: which training classes are held out (a fixed seeded choice of round(fraction
x classes), at least 2 each side), and the two parts of the training split it cuts, on the embedded glyphs."""

import numpy as np
import pytest

from dml_core.data import load_split
from dml_core.data.registry import get_spec
from dml_core.data.validation_split import (
    held_out_classes,
    split_off_validation,
    training_positions,
    validation_record,
)
from dml_core.errors import InputError
from dml_core.recipes.settings import ValidationSplitSettings

TWENTY_PERCENT = ValidationSplitSettings(fraction=0.2, seed=0)


@pytest.fixture(scope="module")
def glyph_splits(tmp_path_factory, copy_glyph_sets):
    root = copy_glyph_sets(tmp_path_factory.mktemp("data"))
    glyphs = get_spec("embedded")
    return load_split(glyphs, root, "train"), load_split(glyphs, root, "test")


def test_the_held_out_classes_are_disjoint_from_the_classes_left_to_train_on_and_from_the_test_classes(glyph_splits):
    train, test = glyph_splits
    kept, validation = split_off_validation(train, TWENTY_PERCENT)
    held_out, left = set(validation.labels.tolist()), set(kept.labels.tolist())
    assert len(held_out) == round(0.2 * 47) == 9 and len(left) == 47 - 9
    assert held_out.isdisjoint(left) and held_out.isdisjoint(test.labels.tolist())
    assert held_out | left == set(train.labels.tolist())
    # every training image goes to exactly one side, with its own label
    assert sorted(kept.relative_paths + validation.relative_paths) == sorted(train.relative_paths)
    assert len(kept) == len(training_positions(train.labels, TWENTY_PERCENT)) == 38 * 24
    rows = dict(zip(train.relative_paths, train.labels.tolist(), strict=True))
    assert all(rows[path] == label for path, label in zip(validation.relative_paths, validation.labels, strict=True))
    assert (validation.split, kept.split) == ("validation", "train")


def test_the_choice_depends_on_the_classes_fraction_and_seed_only():
    classes = np.arange(33, 127, 2)  # 47 class ids, as the glyph sets have
    first = held_out_classes(classes, 0.2, seed=0)
    assert np.array_equal(first, held_out_classes(classes[::-1].repeat(3), 0.2, seed=0))  # order, repeats: same
    assert not np.array_equal(first, held_out_classes(classes, 0.2, seed=1))
    assert np.array_equal(first, np.sort(first)) and set(first) <= set(classes)


def test_no_split_leaves_the_training_split_whole(glyph_splits):
    train, _ = glyph_splits
    assert split_off_validation(train, None) == (train, None)
    assert np.array_equal(training_positions(train.labels, None), np.arange(len(train)))


def test_at_least_two_classes_are_held_out_and_two_left():
    assert len(held_out_classes(range(47), 0.01, seed=0)) == 2
    assert len(held_out_classes(range(4), 0.5, seed=0)) == 2
    with pytest.raises(InputError, match=r"data\.validation\.fraction: 0\.5 of 3 training classes holds out 2"):
        held_out_classes(range(3), 0.5, seed=0)
    with pytest.raises(InputError, match="left to train on"):
        held_out_classes(range(10), 0.9, seed=0)


@pytest.mark.parametrize("fraction", [0.0, 1.0, -0.2, 1.5])
def test_a_fraction_outside_zero_one_is_refused_naming_the_field(fraction):
    with pytest.raises(InputError, match=rf"data\.validation\.fraction: expected .* in \(0, 1\), found {fraction}"):
        held_out_classes(range(10), fraction, seed=0)


def test_the_record_names_the_classes_by_a_hash_of_their_sorted_ids():
    record = validation_record(TWENTY_PERCENT, [9, 3, 5, 3])
    assert record == {
        "fraction": 0.2,
        "seed": 0,
        "classes": 3,
        # hashlib.sha256(b"3,5,9").hexdigest()
        "classes_sha256": "998e8304de2b3d9b08dce8badd14771336bda5f3ea63cb46bba47436de8f361c",
    }
