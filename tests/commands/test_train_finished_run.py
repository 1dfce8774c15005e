"""One finished-run rule in every tier: ``dml train`` skips a finished run of the same recipe, refuses one of
another recipe (with or without ``--resume``) without touching its results file, and trains it again only with
``--rerun``. The smoke and mini tiers keep no checkpoint once finished, so their results file is what is asked."""

import pytest

from dml_core import cli
from dml_core.results import deep_results_payload, load_results, write_results
from dml_core.runner import run_path
from dml_core.training.run_description import RunToTrain
from dml_core.training.trainer import TrainingRun
from tests.training.tiny_runs import recipe_file, tiny_run

# the trainer tests' tiny run, two iterations long, with the tiers' own shrinks as small as the full run's, so each
# tier trains in seconds
RECIPE = {
    **tiny_run(training={"iterations": 2, "eval_every": 2}),
    "paper": "cgml",
    "targets": [{"table": "table3", "row": "triplet-cub200"}],
    "smoke": {"iterations": 2, "eval_every": 2, "image_size": 32, "resize": 40},
    "mini": {"iterations": 2, "image_size": 32, "resize": 40},
}

TIER_FLAGS = {"full": ["--device", "cpu"], "smoke": ["--smoke"], "mini": ["--mini"]}  # full scale: the CPU asked for


@pytest.fixture(scope="module")
def data_root(tmp_path_factory, copy_glyph_sets):
    return copy_glyph_sets(tmp_path_factory.mktemp("data"))


def _train(recipe, out, tier, *extra):
    return cli.main(["train", str(recipe), "--out", str(out), "--no-progress", *TIER_FLAGS[tier], *extra])


class StandInTrainer:
    """``dml_core.training.train`` without the training: writes the results file a finished run of the planned
    recipe would (the rule under test is decided before any training) and counts its calls."""

    def __init__(self):
        self.calls = []

    def __call__(self, run: RunToTrain):
        self.calls.append({"tier": run.plan.tier, "resume": run.resume, "rerun": run.rerun})
        path, recipe = run.plan.results_path, run.plan.recipe
        evaluation = {"iteration": 2, "epoch": 1.0, "metrics": {"R@1": 0.5}, "seconds": 0.1}
        timing = {"train_seconds": 1.0, "data_wait_seconds": 0.0, "compute_seconds": 1.0, "evaluation_seconds": 0.1}
        payload = deep_results_payload(
            recipe, recipe_path=None, overrides=[], tier=run.plan.tier, weights_id=None,
            index_hashes={}, git={}, environment={}, protocol={}, evaluations=[evaluation], timing=timing, total=2,
            resumed_runs=0, world_size=1, device_type="cpu",
        )  # fmt: skip
        return write_results(path, payload)


def _assert_finished_run_rule(recipe, out, tier, capsys, trainings):
    """After a first run into ``out``: same recipe skipped, another refused, ``--rerun`` trains again.
    ``trainings()`` counts the trainings so far."""
    results_path = out / "results.json"
    first = load_results(results_path)
    written, trained = results_path.stat().st_ino, trainings()  # an atomic rewrite gives the file a new inode
    capsys.readouterr()

    for extra in ([], ["--resume"]):  # the same recipe: skipped, one line saying so
        assert _train(recipe, out, tier, *extra) == 0
        assert "finished earlier with this recipe" in capsys.readouterr().out
        assert results_path.stat().st_ino == written and trainings() == trained

    for extra in ([], ["--resume"]):  # another recipe: refused, naming the file and both hashes
        assert _train(recipe, out, tier, "--set", "optimizer.lr=0.002", *extra) == 2
        error = capsys.readouterr().err.strip()
        assert len(error.splitlines()) == 1 and str(results_path) in error and "--rerun" in error
        assert first.recipe.sha256[:12] in error
        assert results_path.stat().st_ino == written and trainings() == trained
        assert load_results(results_path).recipe.sha256 == first.recipe.sha256

    assert _train(recipe, out, tier, "--rerun") == 0  # --rerun trains it again and replaces the results file
    assert trainings() == trained + 1 and results_path.stat().st_ino != written
    assert load_results(results_path).recipe.sha256 == first.recipe.sha256


@pytest.mark.parametrize("tier", ["full", "smoke", "mini"])
def test_a_finished_run_is_skipped_refused_for_another_recipe_and_trained_again_only_with_rerun(
    tier, tmp_path, monkeypatch, capsys
):
    trainer = StandInTrainer()
    monkeypatch.setattr(run_path, "train", trainer)  # the one training entry's trainer
    recipe, out = recipe_file(tmp_path, RECIPE), tmp_path / "run"
    assert _train(recipe, out, tier) == 0 and len(trainer.calls) == 1
    assert load_results(out / "results.json").tier == tier  # the tier --smoke / --mini chose
    _assert_finished_run_rule(recipe, out, tier, capsys, lambda: len(trainer.calls))
    assert trainer.calls[-1]["rerun"] is True


@pytest.mark.slow
def test_the_rule_holds_for_a_real_smoke_run(tmp_path, data_root, monkeypatch, capsys):
    """The same with the trainer itself: a finished smoke run keeps no checkpoint, so only its results file
    stops it being trained again."""
    monkeypatch.setenv("DML_DATA_ROOT", str(data_root))
    recipe, out = recipe_file(tmp_path, RECIPE), tmp_path / "run"
    assert _train(recipe, out, "smoke") == 0
    assert not (out / "checkpoint.pt").exists()
    created = []
    monkeypatch.setattr(TrainingRun, "train", _counting(TrainingRun.train, created))
    _assert_finished_run_rule(recipe, out, "smoke", capsys, lambda: len(created))


def _counting(method, calls):
    def counted(self, *args, **kwargs):
        calls.append(self)
        return method(self, *args, **kwargs)

    return counted
