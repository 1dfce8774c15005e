"""A rehearsal (``--max-steps``): a full-scale recipe as it is (its content hash too) cut to its first steps, evaluated
on the Recall@K list its tiny test split allows, written as a rehearsal apart from real results, never continuing
another length's checkpoint; ``dml reproduce --device cpu --max-steps 1`` reaches and finishes its first step."""

import pytest
import torch

from dml_core.cli import main
from dml_core.errors import InputError
from dml_core.recipes import load_recipe
from dml_core.results import RehearsalRecord, load_results
from dml_core.training import train
from dml_core.training.run_description import PlannedRun, RunToTrain
from tests.tables.synthetic import PAPER_KEY, write_papers_dir, write_recipe
from tests.training.tiny_runs import recipe_file, tiny_run

# The fixture CUB (two training classes, two test classes, three images each) at full scale: its test split has 6
# images, so a query retrieves at most 5 and CUB's Recall@K list (1, 2, 4, 8, 16, 32) stops at K = 4.
CUB = {
    "dataset": "cub200",
    "num_workers": 0,
    "transforms": {"resize_mode": "squash", "resize": 40, "crop_size": 32, "train_crop": "random_crop"},
}
PAIRS = {"name": "pk", "params": {"classes_per_batch": 2, "images_per_class": 2}}


def _cub_run(tmp_path, iterations=10):
    tree = tiny_run(
        data=CUB,
        sampler=PAIRS,
        training={"iterations": iterations, "eval_every": 5, "checkpoint_every": 5},
        evaluation={"recall_ks": [], "metrics": ["recall", "nmi"]},  # CUB's own K list
    )
    return load_recipe(recipe_file(tmp_path, tree))


def test_a_rehearsal_trains_the_first_steps_of_the_recipe_and_says_so(tmp_path, odd_sized_cub):
    recipe = _cub_run(tmp_path)
    path = train(
        RunToTrain(
            PlannedRun(recipe, tmp_path / "run"), data_root=odd_sized_cub, device="cpu", progress=False, max_steps=1
        )
    )
    results = load_results(path)
    assert results.rehearsal == RehearsalRecord(max_steps=1, recipe_iterations=10)
    assert results.recipe.sha256 == recipe.content_hash()  # the recipe as it is: its hash unchanged
    assert [evaluation.iteration for evaluation in results.evaluations] == [1] and results.timing.iterations == 1
    assert set(results.evaluations[0].metrics) == {"R@1", "R@2", "R@4", "NMI"}  # K = 8 and up need 9+ images
    assert results.evaluation_protocol["knn"]["recall_ks"] == [1, 2, 4]
    assert results.environment["device"] == "cpu" and results.environment["gpu_driver"] is None
    assert not (tmp_path / "run" / "checkpoint.pt").exists(), "a finished rehearsal keeps no checkpoint"
    again = train(
        RunToTrain(
            PlannedRun(recipe, tmp_path / "run"), data_root=odd_sized_cub, device="cpu", progress=False, max_steps=2
        )
    )
    assert load_results(again).rehearsal.max_steps == 2  # a rehearsal always trains: its results keep nothing


def test_a_rehearsal_never_continues_a_whole_run_s_checkpoint_nor_the_reverse(tmp_path, odd_sized_cub):
    recipe = _cub_run(tmp_path, iterations=1)
    recipe = recipe.model_copy(update={"evaluation": recipe.evaluation.model_copy(update={"recall_ks": [1]})})
    train(
        RunToTrain(PlannedRun(recipe, tmp_path / "run"), data_root=odd_sized_cub, device="cpu", progress=False)
    )  # keeps its checkpoint
    with pytest.raises(InputError, match=r"checkpoint.pt: written by a run of the whole recipe, continued by a "
                                         r"rehearsal cut to 1 step; use another --out"):  # fmt: skip
        train(
            RunToTrain(
                PlannedRun(recipe, tmp_path / "run"), data_root=odd_sized_cub, device="cpu", progress=False, max_steps=1
            )
        )


def test_dml_train_says_its_device_first_and_puts_a_rehearsal_apart(tmp_path, odd_sized_cub, monkeypatch, capsys):
    monkeypatch.setenv("DML_RUNS_DIR", str(tmp_path / "runs"))
    path = recipe_file(tmp_path, tiny_run(data=CUB, sampler=PAIRS, evaluation={"recall_ks": [1]}))
    assert main(["train", str(path), "--device", "cpu", "--max-steps", "1", "--data-root", str(odd_sized_cub),
                 "--no-progress"]) == 0  # fmt: skip
    first, written = capsys.readouterr().out.splitlines()
    out = tmp_path / "runs" / "rehearsal" / "tiny-seed0"
    assert first.startswith("tiny-seed0: training (rehearsal: its first 1 step) on CPU (") and first.endswith(
        f"torch {torch.__version__} in {out}"
    )
    assert written == str(out / "results.json") and load_results(written).rehearsal.max_steps == 1


@pytest.mark.slow
def test_dml_reproduce_rehearses_a_full_scale_paper_on_the_cpu_apart_from_its_results(tmp_path, odd_sized_cub, capsys):
    write_recipe(tmp_path / "reproduce", data=CUB, sampler=PAIRS, model={"backbone": "googlenet", "weights": "random"},
                 training={"iterations": 40000, "eval_every": 1000}, evaluation={"metrics": ["recall"]})  # fmt: skip
    args = [
        "reproduce", PAPER_KEY, "--device", "cpu", "--max-steps", "1", "--no-progress",
        "--recipes", str(tmp_path / "reproduce"), "--papers-dir", str(write_papers_dir(tmp_path)),
        "--runs", str(tmp_path / "runs"), "--results", str(tmp_path / "results"), "--tables", str(tmp_path / "tables"),
        "--data-root", str(odd_sized_cub),
    ]  # fmt: skip
    assert main(args) == 0
    out = capsys.readouterr().out
    assert "damlrrm: the plan (a rehearsal: full-scale recipes cut to 1 step, results never in tables)" in out
    assert "[1/1] ours-cub200 seed 0: training (rehearsal: its first 1 step) on CPU (" in out
    assert "rehearsal: no tables" in out and "1 trained, 0 skipped (finished), 0 failed" in out
    results = load_results(tmp_path / "results" / "rehearsal" / PAPER_KEY / "ours-cub200-seed0.json")
    assert results.rehearsal == RehearsalRecord(max_steps=1, recipe_iterations=40000)
    assert [evaluation.iteration for evaluation in results.evaluations] == [1]
    assert not (tmp_path / "results" / PAPER_KEY).exists() and not (tmp_path / "tables").exists()
    assert main([*args, "--smoke"]) == 2  # a smoke run is short already
    assert "--max-steps 1: a rehearsal of the full-scale recipes" in capsys.readouterr().err
