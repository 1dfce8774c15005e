"""The fair table's rule for same batches (``dml_core.tables.fair.batches``) against the batches the study's samplers
build: two runs of one seed whose recorded sampler (as built: every parameter, its defaults and what it derived, such
as damlrrm's shuffled pool) and split agree see the same images in the same order with the same crop seeds, and two
whose records differ do not. Checked for every pair of the study's recipes at the mini and smoke tiers, with the
samplers the trainer builds (``training.builders.build_sampler``) and the record the trainer writes
(``data.samplers.sampler_record``). The code-version part of the rule: tests/tables/fair/test_build.py."""

import itertools

import numpy as np
import pytest

from dml_core.data.samplers import sampler_record
from dml_core.pipeline.seeded_batches import EpochSlice
from dml_core.recipes import load_paper, mini_version, smoke_version
from dml_core.tables.fair.batches import batch_stream
from dml_core.training.builders import build_sampler

FAIR = load_paper("fair")
CUB = [run for run in FAIR.runs if run.id.endswith("-cub200")]
# A training split with uneven classes (8 to 16 images), as the glyph sets and the real ones have
LABELS = np.repeat(np.arange(30), [8 + index % 9 for index in range(30)])


def _key(recipe, train_index="train-index"):
    """What the run's results file records of its batches, as the table reads it."""
    record = sampler_record(recipe.sampler.name, recipe.sampler.params, build_sampler(recipe, LABELS))
    return batch_stream(record, recipe.model_dump(mode="json"), train_index)


def _stream(recipe, epochs=2):
    """Every (image, crop seed) the run's loader draws in its first ``epochs`` epochs."""
    sampler = build_sampler(recipe, LABELS)
    return [key for epoch in range(epochs) for batch in EpochSlice(sampler, epoch, 0, recipe.training.seed)
            for key in batch]  # fmt: skip


@pytest.mark.parametrize("shrink", [mini_version, smoke_version], ids=["mini", "smoke"])
@pytest.mark.parametrize("seed", [0, 1])
def test_same_recorded_batches_means_the_same_images_and_crops_and_nothing_else_does(shrink, seed):
    recipes = {run.id: shrink(run.recipe(overrides=[f"training.seed={seed}"])) for run in CUB}
    streams = {run_id: _stream(recipe) for run_id, recipe in recipes.items()}
    keys = {run_id: _key(recipe) for run_id, recipe in recipes.items()}
    shared = []
    for a, b in itertools.combinations(sorted(recipes), 2):
        assert (keys[a] == keys[b]) == (streams[a] == streams[b]), (a, b)
        shared += [(a, b)] if keys[a] == keys[b] else []
    # the PK methods share theirs; cgml shares its with its control alone; damlrrm's are its own
    assert ("cgml-cub200", "multi-similarity-paired-cub200") in shared
    assert ("anml-cub200", "triplet-semihard-cub200") in shared
    assert not [pair for pair in shared if "damlrrm-cub200" in pair]
    assert not [pair for pair in shared if "cgml-cub200" in pair and "multi-similarity-paired-cub200" not in pair]


def test_another_seed_split_or_pool_is_another_batch_stream():
    recipe = mini_version(FAIR.run("anml-cub200").recipe())
    other_seed = mini_version(FAIR.run("anml-cub200").recipe(overrides=["training.seed=1"]))
    assert _key(recipe) != _key(other_seed)
    assert _key(recipe, "a") != _key(recipe, "b")  # another training split's index
    assert _stream(recipe) != _stream(other_seed)
    # damlrrm at the sampler's default pool (half the split) and at damlrrm's own (cycled): their recipes differ in
    # the pool alone, and so do their records and their batches
    damlrrm = mini_version(FAIR.run("damlrrm-cub200").recipe())
    params = {k: v for k, v in damlrrm.sampler.params.items() if k not in ("shuffled_pool_size", "reshuffle_pool")}
    half = damlrrm.model_copy(update={"sampler": damlrrm.sampler.model_copy(update={"params": params})})
    assert _key(half) != _key(damlrrm) and _stream(half) != _stream(damlrrm)
