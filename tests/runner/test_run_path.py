"""One path from a planned run to the trainer, whichever command planned it: the same bad input gets the same
``InputError`` from ``dml train`` and from ``dml reproduce`` (in this process, as jobs, or only planned), because each
rule lives in one place: the device (``device_choice.chosen_device``), ``--max-steps`` only at full scale
(``RunPath.check_rehearsal``), the finished-run rule (``finished_runs``), and the inputs a run reads (the preflight,
which ``dml train`` now runs too). Nothing here trains: every case is refused before."""

import pytest
import torch

from dml_core.cli import main
from dml_core.error_boundary import BAD_INPUT
from dml_core.results import write_results
from dml_core.runner.plan import paper_runs, plan_runs
from dml_core.tier import Tier
from tests.tables.synthetic import PAPER_KEY, TINY_SMOKE, write_papers_dir, write_recipe
from tests.test_results import _payload as results_test_payload


@pytest.fixture
def paper(tmp_path):
    """A synthetic paper of one tiny run (``ours-cub200``): its recipe file, and ``dml reproduce``'s arguments."""
    recipe = write_recipe(tmp_path / "reproduce", **TINY_SMOKE)
    folders = [
        "--recipes", tmp_path / "reproduce", "--papers-dir", write_papers_dir(tmp_path), "--runs", tmp_path / "runs",
        "--results", tmp_path / "results", "--tables", tmp_path / "tables", "--data-root", tmp_path / "data",
        "--no-progress", "--no-download",
    ]  # fmt: skip
    return recipe, ["reproduce", PAPER_KEY, *folders]


def _refused(capsys, *args) -> str:
    """``dml ARGS`` exits 2 (bad input) with one error and no traceback; returns the error after ``error: ``."""
    assert main([str(arg) for arg in args]) == BAD_INPUT
    err = capsys.readouterr().err
    assert err.startswith("error: ") and "Traceback" not in err, err
    return err.strip().removeprefix("error: ")


@pytest.mark.parametrize("device", ["gpu0", "cuda:first"])
def test_a_device_torch_cannot_read_gets_the_same_error_from_every_command(paper, tmp_path, capsys, device):
    recipe, reproduce = paper
    error = _refused(capsys, "train", recipe, "--smoke", "--device", device, "--out", tmp_path / "run")
    assert error == f"device {device!r}: expected a torch device such as cpu, cuda or cuda:1"
    for how in ([], ["--plan"], ["--launcher", "local"]):  # here, only planned, as jobs (refused before submitting)
        assert _refused(capsys, *reproduce, "--smoke", "--device", device, *how) == error, how
    assert not (tmp_path / "run").exists() and not (tmp_path / "runs").exists()


@pytest.mark.parametrize("tier", ["smoke", "mini"])
def test_max_steps_outside_full_scale_gets_the_same_error_from_train_and_reproduce(paper, tmp_path, capsys, tier):
    recipe, reproduce = paper
    error = _refused(capsys, "train", recipe, f"--{tier}", "--max-steps", "1", "--out", tmp_path / "run")
    assert error == f"--max-steps 1: a rehearsal of the full-scale recipes; the {tier} tier's runs are short already"
    assert _refused(capsys, *reproduce, f"--{tier}", "--max-steps", "1") == error


def test_a_finished_run_of_another_recipe_gets_the_same_refusal_from_train_and_reproduce(paper, tmp_path, capsys):
    recipe, reproduce = paper
    runs, _ = paper_runs(tmp_path / "reproduce", PAPER_KEY)
    (plan,) = plan_runs(PAPER_KEY, runs, None, Tier.SMOKE, tmp_path / "runs", tmp_path / "results")
    other = {**results_test_payload(), "recipe": {**results_test_payload()["recipe"], "sha256": "e" * 64}}
    write_results(plan.results_path, other)  # e.g. the recipe was edited after this run finished
    where = ["--out", plan.run_dir, "--results", plan.results_path]  # where reproduce puts the run: the same file
    error = _refused(capsys, "train", recipe, "--smoke", *where, "--data-root", tmp_path / "data")
    assert error.startswith(f"{plan.results_path}: a finished run of recipe hash eeeeeeeeeeee is there, but this ")
    assert "--rerun" in error and "\n" not in error
    listed = _refused(capsys, *reproduce, "--smoke").splitlines()
    assert listed == [f"paper {PAPER_KEY}: finished runs of other recipes:", f"  {error}"]
    assert not plan.run_dir.exists()


@pytest.mark.usefixtures("no_weights_anywhere")
def test_train_refuses_a_missing_dataset_before_anything_trains_as_reproduce_does(paper, tmp_path, capsys):
    recipe, reproduce = paper
    full_scale = ["--device", "cpu"]  # the recipe as it is: cub200, not prepared under --data-root
    error = _refused(capsys, "train", recipe, *full_scale, "--data-root", tmp_path / "data", "--out", tmp_path / "run")
    lines = _refused(capsys, *reproduce, *full_scale).splitlines()
    assert lines[0] == f"paper {PAPER_KEY}: missing inputs (1 of 1 run blocked):"
    dataset, weights = (line.strip() for line in lines[1:5:2])  # each followed by the runs it blocks
    assert dataset.startswith(f"dataset cub200 (CUB-200-2011) is not prepared under {tmp_path / 'data'}: run ")
    assert weights.startswith("weight file bn_inception-52deb4733.pth for backbone 'bn_inception' not found")
    assert error == f"{dataset}; {weights}"  # one run: its missing inputs on one line
    assert not (tmp_path / "run").exists() and not (tmp_path / "runs").exists()


@pytest.fixture
def no_weights_anywhere(tmp_path, monkeypatch):
    """No weight file where ``models.weights`` looks: an empty ``$DML_WEIGHTS_DIR`` and torch hub folder."""
    monkeypatch.setenv("DML_WEIGHTS_DIR", str(tmp_path / "weights"))
    monkeypatch.setattr(torch.hub, "get_dir", lambda: str(tmp_path / "hub"))
