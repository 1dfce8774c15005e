"""The training loop end to end on the embedded dataset (CPU): results file, resume and rerun rules, NaN stop."""

import json
import os
import re

import pytest
import yaml

from dml_core import host_load
from dml_core.data.index import dataset_index_hashes
from dml_core.errors import InputError, NonFiniteError
from dml_core.recipes import load_recipe, resolve_run
from dml_core.results import HostLoadRecord, load_results
from dml_core.tier import Tier
from dml_core.training import train
from dml_core.training.checkpoint import load_checkpoint
from dml_core.training.run_description import PlannedRun, RunToTrain

RECIPE = {
    "id": "tiny",
    "paper": "cgml",
    "targets": [{"table": "table3", "row": "triplet-cub200"}],
    "data": {
        "dataset": "embedded",
        "num_workers": 0,
        "transforms": {"resize": 40, "crop_size": 32, "train_crop": "random_crop"},
    },
    "model": {"backbone": "bn_inception", "weights": "random", "width": 0.125, "embedding_dim": 16},
    "loss": {"name": "multi_similarity"},
    "sampler": {"name": "pk", "params": {"classes_per_batch": 4, "images_per_class": 2}},
    "optimizer": {"name": "adam", "lr": 1e-3},
    "schedule": {"name": "step", "step_size": 4, "gamma": 0.5},
    "training": {"iterations": 6, "eval_every": 3, "checkpoint_every": 1, "eval_batch_size": 256},
    "evaluation": {"recall_ks": [1, 2], "kmeans_iterations": 5},
}


@pytest.fixture(scope="module")
def data_root(tmp_path_factory, copy_glyph_sets):
    return copy_glyph_sets(tmp_path_factory.mktemp("data"))


def _train(recipe, run_dir, data_root, *, recipe_path=None, tier=Tier.FULL, **where):
    """``train`` of ``recipe`` planned into ``run_dir`` (declared in ``recipe_path``) on ``data_root``; ``where``:
    the other options of ``RunToTrain``."""
    run = resolve_run(recipe_path) if recipe_path else None
    return train(
        RunToTrain(PlannedRun(recipe, run_dir, tier=tier, run=run), data_root=data_root, progress=False, **where)
    )


def _recipe_file(tmp_path, **changes):
    tree = json.loads(json.dumps(RECIPE))
    for key, value in changes.items():
        section, field = key.split("__")
        tree[section][field] = value
    path = tmp_path / "recipe.yaml"
    path.write_text(yaml.safe_dump(tree))
    return path


@pytest.mark.slow
def test_a_tiny_run_writes_a_valid_results_file(tmp_path, data_root, monkeypatch):
    monkeypatch.setattr(host_load, "load_average", lambda: 7.0)  # the host's load, as the trainer samples it
    path = _recipe_file(tmp_path)
    results_path = _train(load_recipe(path), tmp_path / "run", data_root, recipe_path=path)
    results = load_results(results_path)
    assert [e.iteration for e in results.evaluations] == [3, 6]
    assert set(results.evaluations[-1].metrics) == {"R@1", "R@2", "NMI", "F1", "MAP@R", "RP"}
    assert results.selection.rule == "best_r1"
    assert results.selections["best_r1"] == results.selection and results.selections["final"].iteration == 6
    assert results.weights["id"] == "random init"
    assert results.recipe.sha256 == load_recipe(path).content_hash()
    assert results.index_hashes == dataset_index_hashes(data_root / "embedded")  # the images it ran on
    # what decided its batches beside those images: the sampler, its seed and every parameter, defaults included
    assert results.sampler.model_dump() == {"name": "pk", "seed": 0, "derived": {},
                                            "settings": {"classes_per_batch": 4, "images_per_class": 2,
                                                         "min_class_size": 1}}  # fmt: skip
    assert results.evaluation_protocol["self_exclusion"] == "by index"
    assert results.timing.iterations == 6 and results.timing.iterations_per_second > 0
    # sampled at each evaluation (2), checkpoint (6) and epoch's end (1), beside the host's CPUs
    cpus = os.cpu_count()
    expected = HostLoadRecord(cpus=cpus, samples=9, mean=7.0, max=7.0, mean_per_cpu=7.0 / cpus, max_per_cpu=7.0 / cpus)
    recorded = results.timing.host_load
    assert recorded.other_cpus == [] and recorded.model_dump(exclude={"other_cpus"}) == pytest.approx(
        expected.model_dump(exclude={"other_cpus"})
    )  # approx: the per-CPU mean is a sum of 9 loads over the CPUs
    assert results.git["commit"]
    # A finished run is skipped, with or without --resume, also with its prose reworded; a changed computation is
    # refused (dml_core.finished_runs).
    assert _train(load_recipe(path), tmp_path / "run", data_root, resume=True) == results_path
    reworded = load_recipe(path).model_copy(update={"description": "reworded", "assumptions": {"1": "new"}})
    assert _train(reworded, tmp_path / "run", data_root, resume=True) == results_path
    (tmp_path / "faster").mkdir()
    faster = load_recipe(_recipe_file(tmp_path / "faster", optimizer__lr=2e-3))
    with pytest.raises(InputError, match="recipe hash"):
        _train(faster, tmp_path / "run", data_root, resume=True)
    assert _train(load_recipe(path), tmp_path / "run", data_root) == results_path
    with pytest.raises(InputError, match="recipe hash"):
        _train(faster, tmp_path / "run", data_root)


# A run killed with SIGKILL and resumed: tests/gpu_check/test_resume.py (the GPU check's resume part, on the CPU)
# checks its parameters, evaluations, selection and git segments against the uninterrupted run's.


@pytest.mark.slow
def test_a_non_finite_loss_stops_with_a_diagnostic_and_keeps_the_last_good_checkpoint(tmp_path, data_root):
    # Unnormalised embeddings, squared-distance hinges squared again, a learning rate of 1e30: the first step
    # is fine, the next loss overflows.
    path = _recipe_file(
        tmp_path,
        model__normalize=False,
        loss__name="contrastive",
        loss__params={"distance": "squared_euclidean", "power": 2},
        optimizer__name="sgd",
        optimizer__lr=1e30,
        training__eval_every=100,
        training__iterations=200,
    )
    with pytest.raises(NonFiniteError) as error:
        _train(load_recipe(path), tmp_path / "run", data_root)
    message = str(error.value)
    assert "non-finite loss at iteration" in message and "terms" in message
    bad_iteration = int(re.search(r"non-finite loss at iteration (\d+)", message).group(1))
    kept = load_checkpoint(tmp_path / "run" / "checkpoint.pt")
    assert bad_iteration >= 1
    assert kept["iteration"] == bad_iteration  # the state before the bad step, nothing after it
    assert not (tmp_path / "run" / "results.json").exists()


@pytest.mark.slow
def test_the_prepared_data_path_trains_exactly_like_the_pil_path(tmp_path, data_root):
    runs = {}  # (the embedded set's cache is built on first use)
    for pipeline in ("pil", "cache"):
        path = _recipe_file(tmp_path, data__pipeline=pipeline, training__iterations=3, training__eval_every=3)
        runs[pipeline] = load_results(_train(load_recipe(path), tmp_path / pipeline, data_root))
    assert runs["cache"].evaluations[-1].metrics == runs["pil"].evaluations[-1].metrics


@pytest.mark.slow
def test_a_finished_smoke_run_keeps_no_checkpoint_and_a_rerun_trains_again_from_the_start(tmp_path, data_root):
    recipe = load_recipe(_recipe_file(tmp_path, training__iterations=3, training__eval_every=3))
    run = tmp_path / "smoke-run"
    results_path = _train(recipe, run, data_root, tier=Tier.SMOKE)
    assert not (run / "checkpoint.pt").exists(), "a finished smoke run keeps no checkpoint"
    first = load_results(results_path)
    written = results_path.stat().st_ino
    # Its results file alone says it is finished: --resume trains nothing, even without the checkpoint.
    assert _train(recipe, run, data_root, tier=Tier.SMOKE, resume=True) == results_path
    assert results_path.stat().st_ino == written
    # A rerun trains again and replaces the file (a new file; the same numbers on the CPU).
    _train(recipe, run, data_root, tier=Tier.SMOKE, resume=True, rerun=True)
    assert results_path.stat().st_ino != written
    assert load_results(results_path).selection == first.selection
    assert not (run / "checkpoint.pt").exists()

    # A full-scale run keeps its finished checkpoint; a rerun starts over from iteration 0 instead of resuming it.
    full = tmp_path / "full-run"
    results_path = _train(recipe, full, data_root)
    assert load_checkpoint(full / "checkpoint.pt")["finished"]
    rerun = load_results(_train(recipe, full, data_root, resume=True, rerun=True))
    assert rerun.timing.resumed_runs == 0 and [e.iteration for e in rerun.evaluations] == [3]
    assert rerun.selection == load_results(results_path).selection == first.selection
    assert load_checkpoint(full / "checkpoint.pt")["finished"]
