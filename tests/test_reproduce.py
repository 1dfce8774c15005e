"""The paper runner: planning run x seed (under chosen readings), the preflight that names every recipe problem
and every missing dataset and weight file with how to get it, and (slow) a whole smoke reproduction of a tiny
synthetic paper through ``dml reproduce``, run twice: the second run skips the finished work, also after its
prose was reworded."""

import dataclasses

import pytest
import torch

from dml_core.cli import main
from dml_core.errors import InputError
from dml_core.results import write_results
from dml_core.runner.inline import PaperRun, Preflight, ReproduceReport, reproduce, reproduce_paper
from dml_core.runner.plan import is_finished, paper_runs, plan_runs
from dml_core.runner.preflight import missing_inputs
from dml_core.tier import Tier
from tests.tables.synthetic import PAPER_KEY, TINY_SMOKE, write_papers_dir, write_recipe
from tests.test_results import _payload as results_test_payload

# A run whose inputs every machine has: the generated glyphs, random weights.
GLYPH_RUN = {
    "targets": [{"table": "table1", "row": "lifted-cub200"}],
    "data": {"dataset": "embedded", "num_workers": 0, "transforms": {"resize": 40, "crop_size": 32}},
    "model": {"backbone": "bn_inception", "weights": "random", "width": 0.125, "embedding_dim": 16},
}


def _plans(tmp_path, seeds=None, smoke=False, only=(), pipeline=None, readings=None):
    runs, _ = paper_runs(tmp_path / "reproduce", PAPER_KEY, only)
    return plan_runs(
        PAPER_KEY, runs, seeds, Tier.from_flags(smoke), tmp_path / "runs", tmp_path / "results", pipeline, readings
    )


def test_plans_every_recipe_and_seed_with_its_paths(tmp_path):
    write_recipe(tmp_path / "reproduce")
    write_recipe(tmp_path / "reproduce", id="lifted-cub200", targets=[{"table": "table1", "row": "lifted-cub200"}])
    plans = _plans(tmp_path, seeds=[0, 2])
    assert [(p.recipe.id, p.recipe.training.seed) for p in plans] == [
        ("lifted-cub200", 0), ("lifted-cub200", 2), ("ours-cub200", 0), ("ours-cub200", 2),
    ]  # fmt: skip
    assert plans[1].results_path == tmp_path / "results" / PAPER_KEY / "lifted-cub200-seed2.json"
    assert plans[1].run_dir == tmp_path / "runs" / PAPER_KEY / "lifted-cub200-seed2"
    assert plans[1].overrides == ("training.seed=2",)
    smoke = _plans(tmp_path, smoke=True, only=["ours-cub200"])
    assert [p.recipe.data.dataset for p in smoke] == ["embedded"]
    assert smoke[0].results_path == tmp_path / "results" / "smoke" / PAPER_KEY / "ours-cub200-seed0.json"
    with pytest.raises(InputError, match=r"--only: expected run ids of damlrrm \(lifted-cub200, ours-cub200\)"):
        _plans(tmp_path, only=["nope"])
    with pytest.raises(InputError, match="no recipes"):
        paper_runs(tmp_path / "reproduce", "gpw")
    with pytest.raises(InputError, match=r"--reading damlrrm\.lr: none of the runs of damlrrm rests on this"):
        _plans(tmp_path, readings={"damlrrm.lr": "1e-3"})


def test_a_typo_in_a_component_parameter_stops_the_paper_before_anything_trains(tmp_path, monkeypatch):
    monkeypatch.setenv("DML_WEIGHTS_DIR", str(tmp_path / "weights"))
    path = write_recipe(tmp_path / "reproduce", loss={"name": "multi_similarity", "params": {"alhpa": 2.0}})
    paper = PaperRun(
        PAPER_KEY, recipes_dir=tmp_path / "reproduce", runs_root=tmp_path / "runs",
        results_root=tmp_path / "results", tables_root=tmp_path / "tables", tier=Tier.SMOKE,
    )  # fmt: skip
    with pytest.raises(InputError) as error:
        paper.preflight()
    assert f"{path}: run ours-cub200: field loss.params.alhpa: " in str(error.value)
    assert "'multi_similarity' takes no parameter 'alhpa'; accepted: alpha, beta" in str(error.value)
    assert not (tmp_path / "runs").exists()


def test_preflight_names_what_is_missing_and_how_to_get_it(tmp_path, monkeypatch):
    monkeypatch.setenv("DML_WEIGHTS_DIR", str(tmp_path / "weights"))
    write_recipe(tmp_path / "reproduce")
    plans = _plans(tmp_path, seeds=[0, 1])
    data = tmp_path / "data"
    dataset, weights = missing_inputs(plans, data)  # one entry each, not one per seed
    assert dataset.problem.startswith(f"dataset cub200 (CUB-200-2011) is not prepared under {data}: run ")
    assert f"`nox -s dml -- prepare cub200 --root {data}` (downloaded from data.caltech.edu" in dataset.problem
    assert weights.problem.startswith("weight file googlenet-1378be20.pth for backbone 'googlenet' not found")
    assert "`nox -s dml -- weights --fetch googlenet`" in weights.problem
    assert dataset.runs == weights.runs == ["ours-cub200 seed 0", "ours-cub200 seed 1"]  # the runs each blocks
    assert dataset.line(2).endswith("\n    blocks all 2 runs: ours-cub200 seed 0, ours-cub200 seed 1")
    (data / "cub200").mkdir(parents=True)
    (data / "cub200" / "dml_index.csv").write_text("path,label,split\n")
    (tmp_path / "weights").mkdir()
    (tmp_path / "weights" / "googlenet-1378be20.pth").write_bytes(b"checked by sha256 when loaded")
    assert missing_inputs(plans, data) == []
    assert missing_inputs(_plans(tmp_path, smoke=True), tmp_path / "empty") == []  # smoke needs nothing
    # a glyph-pretrained start (mini.start) is pretrained where its cached file is missing, so it is not missing
    write_recipe(tmp_path / "reproduce", model={"backbone": "googlenet", "weights": "glyph-pretrained"})
    assert missing_inputs(_plans(tmp_path), data) == []


def test_the_cache_pipeline_is_an_override_and_the_preflight_asks_for_the_cache_under_torchrun(tmp_path, monkeypatch):
    # One process prepares it in the preflight (tests/pipeline/test_cache_preparation.py); the ranks of several do not.
    monkeypatch.setenv("WORLD_SIZE", "2")
    monkeypatch.setenv("DML_WEIGHTS_DIR", str(tmp_path / "weights"))
    (tmp_path / "weights").mkdir()
    (tmp_path / "weights" / "googlenet-1378be20.pth").write_bytes(b"checked by sha256 when loaded")
    write_recipe(tmp_path / "reproduce")
    data = tmp_path / "data"
    (data / "cub200").mkdir(parents=True)
    (data / "cub200" / "dml_index.csv").write_text("path,label,split\n")
    assert missing_inputs(_plans(tmp_path), data) == []  # the recipe's own pipeline, auto, is the PIL path without one
    plans = _plans(tmp_path, seeds=[3], pipeline="cache")
    assert plans[0].overrides == ("training.seed=3", "data.pipeline=cache")
    assert plans[0].recipe.data.pipeline == "cache"
    (missing,) = missing_inputs(plans, data)
    transforms = plans[0].recipe.data.transforms
    assert missing.problem.startswith(f"{plans[0].recipe_path}: data.pipeline cache: {data / 'cub200' / 'cache'}")
    assert (
        f"run `nox -s dml -- prepare cub200 --root {data} --cache {transforms.resize_mode} "
        f"--cache-size {transforms.resize}`" in missing.problem
    )
    assert missing.runs == ["ours-cub200 seed 3"]
    smoke = _plans(tmp_path, smoke=True, pipeline="cache")
    assert smoke[0].recipe.data.pipeline == "cache"  # kept by the smoke version
    assert missing_inputs(smoke, tmp_path / "empty") == []  # the embedded set's cache is built on first use


def test_missing_inputs_stop_the_paper_before_any_training_unless_the_others_are_asked_for(tmp_path, monkeypatch):
    monkeypatch.setenv("DML_WEIGHTS_DIR", str(tmp_path / "weights"))
    write_recipe(tmp_path / "reproduce")  # CUB and GoogLeNet's weights: neither is here
    write_recipe(tmp_path / "reproduce", id="lifted-cub200", **GLYPH_RUN)  # generated data, random weights
    options = dict(
        recipes_dir=tmp_path / "reproduce", runs_root=tmp_path / "runs", results_root=tmp_path / "results",
        tables_root=tmp_path / "tables", data_root=tmp_path / "data", device="cpu",
    )  # fmt: skip
    with pytest.raises(InputError) as refused:
        reproduce_paper(PAPER_KEY, **options)
    message = str(refused.value)
    assert message.startswith("paper damlrrm: missing inputs (1 of 2 runs blocked):\n  dataset cub200 (CUB-200-2011)")
    assert "\n    blocks 1 run: ours-cub200 seed 0\n  weight file googlenet-1378be20.pth" in message
    assert message.endswith(
        "`nox -s dml -- reproduce damlrrm --skip-missing` trains the 1 run whose inputs are here (lifted-cub200 seed "
        "0) and names those it leaves out; `nox -s dml -- reproduce damlrrm --only ID ...` chooses runs by id"
    )
    assert not (tmp_path / "runs").exists()
    lines = []
    plans, linear_runs, _, not_run = PaperRun(PAPER_KEY, skip_missing=True, **options).preflight(lines.append)
    assert [plan.name for plan in plans] == ["lifted-cub200 seed 0"] and linear_runs == []
    assert list(not_run) == ["ours-cub200 seed 0"]
    assert not_run["ours-cub200 seed 0"].startswith("dataset cub200 (CUB-200-2011) is not prepared under ")
    assert "; weight file googlenet-1378be20.pth for backbone 'googlenet' not found" in not_run["ours-cub200 seed 0"]
    assert "--skip-missing: 1 of 2 runs not run, for want of:" in lines


def test_each_run_says_the_eta_of_the_runs_left_and_rerun_trains_finished_ones(tmp_path, monkeypatch):
    write_recipe(tmp_path / "reproduce")
    write_recipe(tmp_path / "reproduce", id="lifted-cub200", targets=[{"table": "table1", "row": "lifted-cub200"}])
    plans = _plans(tmp_path, seeds=[0, 1], smoke=True)  # lifted 0, lifted 1, ours 0, ours 1
    trained = []
    monkeypatch.setattr(PaperRun, "preflight", lambda self, log=print, device=None: Preflight(plans, [], None, {}))
    monkeypatch.setattr(PaperRun, "train", lambda self, plan: trained.append(plan.name))
    monkeypatch.setattr(PaperRun, "build_tables", lambda self, tolerances, log: None)
    monkeypatch.setattr("dml_core.runner.inline.is_finished", lambda plan: plan is plans[1])
    paper = PaperRun(
        PAPER_KEY, recipes_dir=tmp_path / "reproduce", runs_root=tmp_path / "runs",
        results_root=tmp_path / "results", tables_root=tmp_path / "tables", tier=Tier.SMOKE,
    )  # fmt: skip
    lines = []
    report = reproduce(paper, log=lines.append)
    assert report.skipped == ["lifted-cub200 seed 1"] and trained == ["lifted-cub200 seed 0", *report.trained[1:]]
    assert lines[0].startswith("[1/4] lifted-cub200 seed 0: training (smoke) on CPU (") and "ETA" not in lines[0]
    assert f", torch {torch.__version__} in {plans[0].run_dir}" in lines[0]  # the device, in the run's first line
    assert lines[1] == f"[2/4] lifted-cub200 seed 1: finished earlier ({plans[1].results_path}), skipped"
    assert "(ETA " in lines[2] and ": 2 runs left at " in lines[2]  # this run and the next, at the pace so far
    assert "(ETA " in lines[3] and ": 1 run left at " in lines[3]
    trained.clear()
    report = reproduce(dataclasses.replace(paper, rerun=True), log=lines.append)
    assert report.skipped == [] and trained == [plan.name for plan in plans]


def test_the_closing_summary_and_exit_status_say_what_was_not_run(tmp_path, monkeypatch, capsys):
    missing = "dataset cars196 (Cars196) is not prepared under data: run `nox -s dml -- prepare ...`"
    left_out = {"ours-cars196 seed 0": missing}
    outcomes = {
        "left out": (ReproduceReport(trained=["ours-cub200 seed 0"], not_run=left_out), 3),
        "left out and failed": (ReproduceReport(failed={"ours-sop seed 0": "non-finite loss"}, not_run=left_out), 1),
        "all trained": (ReproduceReport(trained=["ours-cub200 seed 0"]), 0),
    }
    args = ["reproduce", PAPER_KEY, "--skip-missing", "--recipes", str(tmp_path), "--runs", str(tmp_path / "runs")]
    for report, status in outcomes.values():
        monkeypatch.setattr("dml_core.runner.inline.reproduce", lambda paper, report=report: report)
        assert main(args) == status
    out = capsys.readouterr().out.splitlines()
    assert out[:2] == [
        "damlrrm: 1 trained, 0 skipped (finished), 0 failed, 1 not run (missing inputs)",
        f"  NOT RUN ours-cars196 seed 0: {missing}",
    ]
    assert out[-1] == "damlrrm: 1 trained, 0 skipped (finished), 0 failed"


def _smoke_paper_args(tmp_path) -> list[str]:
    """``dml reproduce`` arguments for a smoke run of one tiny recipe, everything under ``tmp_path``."""
    write_recipe(tmp_path / "reproduce", **TINY_SMOKE)
    return [
        "reproduce", PAPER_KEY, "--smoke", "--no-progress", "--recipes", str(tmp_path / "reproduce"),
        "--runs", str(tmp_path / "runs"), "--results", str(tmp_path / "results"), "--tables", str(tmp_path / "tables"),
        "--papers-dir", str(write_papers_dir(tmp_path)), "--data-root", str(tmp_path / "data"),
    ]  # fmt: skip


@pytest.mark.slow
@pytest.mark.usefixtures("glyph_data_root")
def test_a_smoke_reproduction_runs_end_to_end_and_skips_finished_runs(tmp_path, capsys):
    args = _smoke_paper_args(tmp_path)
    assert main(args) == 0
    out = capsys.readouterr().out
    assert "ours-cub200 seed 0: training (smoke)" in out and "1 trained, 0 skipped" in out
    assert (tmp_path / "results" / "smoke" / PAPER_KEY / "ours-cub200-seed0.json").is_file()
    text = (tmp_path / "tables" / "smoke" / f"{PAPER_KEY}.md").read_text()
    assert "NOT comparable with the paper" in text and "OURS" in text
    assert "REFUSED" not in out and "55.1 → " in text, "the real run passes the results gate into its row"
    assert list((tmp_path / "tables" / "smoke" / PAPER_KEY).glob("*.png")), "the table's figures"
    run_dir = tmp_path / "runs" / "smoke" / PAPER_KEY / "ours-cub200-seed0"
    assert run_dir.is_dir() and not (run_dir / "checkpoint.pt").exists(), "a finished smoke run keeps no checkpoint"
    assert main(args) == 0
    assert "0 trained, 1 skipped" in capsys.readouterr().out
    results_path = tmp_path / "results" / "smoke" / PAPER_KEY / "ours-cub200-seed0.json"
    written = results_path.stat().st_ino
    assert main([*args, "--rerun"]) == 0  # fresh numbers: trained again, the file replaced
    out = capsys.readouterr().out
    assert "ours-cub200 seed 0: training again (--rerun) (smoke)" in out and "1 trained, 0 skipped" in out
    assert results_path.stat().st_ino != written
    # Rewording the prose (description, assumptions) leaves the finished run finished; a learning rate does not.
    write_recipe(tmp_path / "reproduce", **TINY_SMOKE, description="Reworded.", assumptions=["A new sentence."])
    (plan,) = _plans(tmp_path, smoke=True)
    assert is_finished(plan)
    write_recipe(tmp_path / "reproduce", **TINY_SMOKE, optimizer={"name": "adam", "lr": 2e-3})
    (plan,) = _plans(tmp_path, smoke=True)
    assert not is_finished(plan)


@pytest.mark.slow
@pytest.mark.usefixtures("glyph_data_root")
def test_a_paper_reproduced_under_torchrun_trains_on_every_process_reports_once_and_builds_the_cache_once(tmp_path):
    """One torchrun of two processes, on the cache pipeline (the PIL one under torchrun: `nox -s dml -- train` in
    tests/training/test_distributed.py)."""
    from dml_core.results import load_results
    from tests.torchrun import torchrun

    completed = torchrun(2, "-m", "dml_core.cli", *_smoke_paper_args(tmp_path), "--pipeline", "cache")
    assert completed.returncode == 0, completed.report()
    assert completed.stdout.count("ours-cub200 seed 0: training (smoke)") == 1, "rank 0 alone reports"
    assert completed.stdout.count("tables: ") == 2, "rank 0 alone builds the page and the index"
    results = load_results(tmp_path / "results" / "smoke" / PAPER_KEY / "ours-cub200-seed0.json")
    assert results.recipe.overrides == ["training.seed=0", "data.pipeline=cache"]
    assert results.world_size == 2 and results.environment["distributed"]["images_per_process"] == 4
    assert (tmp_path / "tables" / "smoke" / f"{PAPER_KEY}.md").is_file()
    caches = sorted(path.name for path in (tmp_path / "data" / "embedded" / "cache").iterdir() if path.name != ".locks")
    assert len(caches) == 1 and ".partial" not in caches[0]  # both ranks' staging folders are gone


def test_a_results_file_of_another_recipe_stops_the_paper_before_anything_trains_unless_rerun(tmp_path):
    write_recipe(tmp_path / "reproduce")
    (plan,) = _plans(tmp_path, smoke=True)
    other = {**results_test_payload(), "recipe": {**results_test_payload()["recipe"], "sha256": "e" * 64}}
    write_results(plan.results_path, other)  # e.g. the recipe was edited after this run finished
    paper = PaperRun(
        PAPER_KEY, recipes_dir=tmp_path / "reproduce", runs_root=tmp_path / "runs",
        results_root=tmp_path / "results", tables_root=tmp_path / "tables", tier=Tier.SMOKE,
    )  # fmt: skip
    with pytest.raises(InputError, match=rf"finished runs of other recipes:\n  {plan.results_path}: .*eeeeeeeeeeee"):
        paper.preflight()
    assert not (tmp_path / "runs").exists()
    plans, _, _, _ = dataclasses.replace(paper, rerun=True).preflight()  # --rerun: it is trained again
    assert plans == [plan]
