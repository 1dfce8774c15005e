"""Training with a validation split (``data.validation``) on the embedded glyphs: the batches never hold a held-out
class (either pipeline), every sampler works on the classes left, and selection on the validation split
(``best_val_r1``) never reads the test classes: a planted test-only signal cannot change the selected checkpoint;
selection on validation MAP@R needs MAP@R among the metrics."""

import numpy as np
import pytest
import torch

from dml_core.data.index import SplitIndex
from dml_core.data.validation_split import held_out_classes
from dml_core.errors import InputError
from dml_core.pipeline.batch_source import CachedBatches, LoaderBatches
from dml_core.recipes import load_recipe
from dml_core.results import load_results, select
from dml_core.training import builders, train
from dml_core.training.run_description import PlannedRun, RunToTrain
from dml_core.training.setup import build_run
from tests.training.tiny_runs import recipe_file, tiny_run

VALIDATION = {"validation": {"fraction": 0.2, "seed": 0}}
GLYPH_TRAIN_CLASSES = list(range(33, 127))  # every printable code point; the smoke set trains on about half


@pytest.fixture(scope="module")
def data_root(tmp_path_factory, copy_glyph_sets):
    return copy_glyph_sets(tmp_path_factory.mktemp("data"))


def _parts(tmp_path, data_root, sampler=None, **data):
    tree = tiny_run(data={**VALIDATION, **data}, **({"sampler": sampler} if sampler else {}))
    recipe = load_recipe(recipe_file(tmp_path, tree))
    return build_run(recipe, data_root, torch.device("cpu"))


def _held_out(parts) -> set[int]:
    return set(parts.validation_set.labels.tolist())


def test_the_training_batches_never_hold_a_held_out_class_on_either_pipeline(tmp_path, data_root):
    pil = _parts(tmp_path, data_root)
    cache = _parts(tmp_path, data_root, pipeline="cache")
    assert isinstance(pil.batches, LoaderBatches) and isinstance(cache.batches, CachedBatches)
    held_out = _held_out(pil)
    trained = pil.train_set.split_index.labels
    assert len(held_out) == 9 and held_out.isdisjoint(trained.tolist())
    assert held_out == set(held_out_classes(trained.tolist() + sorted(held_out), 0.2, seed=0).tolist())
    seen = set()
    for _, positions in cache.batches.epoch(0, 0):  # a whole epoch (no decoding on the cache path)
        seen |= set(trained[positions.numpy()].tolist())
    assert seen == set(trained.tolist())  # every class left, and none held out
    # The cache path picks its rows by the same positions: its batches are the PIL path's, bit for bit.
    for (pil_images, pil_positions), (cache_images, cache_positions) in zip(
        pil.batches.epoch(0, 0), cache.batches.epoch(0, 0), strict=False
    ):
        assert torch.equal(pil_positions, cache_positions) and torch.equal(pil_images, cache_images)
        break
    pil.batches.close()


@pytest.mark.parametrize(
    ("sampler", "loss"),
    [
        ({"name": "pk", "params": {"classes_per_batch": 4, "images_per_class": 2}}, "proxy_anchor"),
        ({"name": "two_stream", "params": {"classes_per_batch": 4, "images_per_class": 2}}, None),
        ({"name": "paired", "params": {"classes_per_batch": 4, "images_per_class": 2}}, None),
    ],
)
def test_every_sampler_and_a_loss_with_one_proxy_per_class_work_on_the_classes_left(tmp_path, data_root, sampler, loss):
    parts = _parts(tmp_path, data_root, sampler)
    if loss:  # one proxy per class left to train on: dense labels 0..C'-1
        tree = tiny_run(data=VALIDATION, sampler=sampler, loss={"name": loss})
        parts = build_run(load_recipe(recipe_file(tmp_path, tree)), data_root, torch.device("cpu"))
        assert parts.loss.proxies.shape[0] == 47 - 9
    assert sorted(set(parts.dense_labels.tolist())) == list(range(47 - 9))
    held_out, trained = _held_out(parts), parts.train_set.split_index.labels
    for batch in parts.sampler:
        assert held_out.isdisjoint(trained[batch].tolist())
        assert len(batch) == sum(parts.sampler.group_sizes)
        break


ITERATIONS = 6


def _train_on_a_small_test_split(tmp_path, monkeypatch, data_root, name: str, planted: bool):
    """A tiny run selected on validation R@1, evaluated after each of its iterations, whose test split is 12 test
    classes of 4 glyphs (fast to embed). ``planted``: the test labels shuffled across those images (a seeded
    shuffle), so that the test numbers of every checkpoint change; the training and validation images stay."""
    test_split = builders.load_test_split

    def small_test_split(dataset, root):
        split, _, _ = test_split(dataset, root)
        rows = np.concatenate([np.flatnonzero(split.labels == label)[:4] for label in np.unique(split.labels)[:12]])
        labels = split.labels[rows]
        if planted:
            labels = np.random.default_rng(0).permutation(labels)
        paths = tuple(split.relative_paths[row] for row in rows)
        return SplitIndex(split.dataset, split.split, split.root, paths, labels), None, None

    monkeypatch.setattr(builders, "load_test_split", small_test_split)
    tree = tiny_run(
        data=VALIDATION,
        training={"iterations": ITERATIONS, "eval_every": 1, "checkpoint_every": ITERATIONS},
        evaluation={"selection": "best_val_r1", "recall_ks": [1], "metrics": ["recall"]},
    )
    folder = tmp_path / name
    folder.mkdir()
    recipe = load_recipe(recipe_file(folder, tree))
    return load_results(train(RunToTrain(PlannedRun(recipe, folder / "run"), data_root=data_root, progress=False)))


@pytest.mark.slow  # two tiny runs, each embedding its validation and test images after every iteration
def test_a_planted_test_only_signal_cannot_change_the_checkpoint_selected_on_validation(
    tmp_path, monkeypatch, data_root
):
    honest = _train_on_a_small_test_split(tmp_path, monkeypatch, data_root, "honest", planted=False)
    planted = _train_on_a_small_test_split(tmp_path, monkeypatch, data_root, "planted", planted=True)
    evaluations = {
        "honest": [evaluation.model_dump() for evaluation in honest.evaluations],
        "planted": [evaluation.model_dump() for evaluation in planted.evaluations],
    }
    # The signal is planted, and moves the pick of a rule that reads the test classes.
    assert len(evaluations["planted"]) == ITERATIONS
    assert [e["metrics"] for e in evaluations["planted"]] != [e["metrics"] for e in evaluations["honest"]]
    test_picks = [select(evaluations[run], "best_r1")["iteration"] for run in ("honest", "planted")]
    assert test_picks[0] != test_picks[1], "the planted signal moves no pick here: it proves nothing"
    # Training and validation never saw it: the same validation numbers at every evaluation, so the same pick.
    assert [e["validation_metrics"] for e in evaluations["planted"]] == [
        e["validation_metrics"] for e in evaluations["honest"]
    ]
    assert planted.selection.rule == honest.selection.rule == "best_val_r1"
    assert planted.selection.iteration == honest.selection.iteration
    assert planted.selection.validation_metrics == honest.selection.validation_metrics
    assert planted.selection.metrics != honest.selection.metrics  # each reports its own test number
    assert planted.evaluation_protocol["validation_split"] == honest.evaluation_protocol["validation_split"]
    assert planted.evaluation_protocol["validation_split"]["classes"] == 9


def test_selection_on_validation_map_r_needs_map_at_r_among_the_metrics(tmp_path):
    tree = tiny_run(data=VALIDATION, evaluation={"metrics": ["recall"], "selection": "best_val_map_r"})
    recipe = load_recipe(recipe_file(tmp_path, tree))
    with pytest.raises(InputError, match=r"selection 'best_val_map_r' needs 'map_at_r' in evaluation\.metrics"):
        train(RunToTrain(PlannedRun(recipe, tmp_path / "run"), device="cpu", progress=False))
    assert not (tmp_path / "run" / "checkpoint.pt").exists()
