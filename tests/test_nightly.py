"""The nightly: named by date and code, refused under its name when the code changed, and (slow) three smoke
nightlies of a tiny anml (one deep recipe, the Iris LANML+ linear plan): the second re-runs everything and
reproduces the first's numbers exactly, and a sign error planted in the LANML loss before the third makes it fail
against the second (recorded as failed: never a baseline, tests/tables/nightly/test_history.py)."""

import copy
import datetime as dt

import pytest
import yaml

from dml_core.cli import main
from dml_core.errors import InputError
from dml_core.runner.nightly import Nightly, run_nightly, start_manifest
from dml_core.tables.nightly.history import history_path, read_history
from dml_core.tables.nightly.trends import trend_path
from tests.tables.synthetic import RECIPE, TINY_SMOKE

CLEAN = {"commit": "0123456789abcdef", "dirty": False, "diff": None}
NOW = dt.datetime(2026, 1, 31, 23, 0, tzinfo=dt.UTC)


def test_a_nightly_resumes_under_its_name_only_with_the_code_it_started_with(tmp_path):
    manifest = start_manifest(tmp_path, "2026-01-31-0123456", "smoke", CLEAN, NOW)
    assert manifest["started"] == "2026-01-31T23:00:00+00:00" and manifest["code"] == CLEAN
    assert start_manifest(tmp_path, "2026-01-31-0123456", "smoke", CLEAN, NOW + dt.timedelta(hours=1)) == manifest
    changed = {**CLEAN, "dirty": True, "diff": "abcdef0123"}
    with pytest.raises(
        InputError,
        match=r"nightly.json: field code: nightly 2026-01-31-0123456 \(smoke\) started at "
        r"commit 0123456; this one is smoke at commit 0123456 with uncommitted changes abcdef01",
    ):
        start_manifest(tmp_path, "2026-01-31-0123456", "smoke", changed, NOW)


def test_an_unknown_tier_or_paper_is_refused_before_anything_runs(tmp_path):
    roots = {"results_root": tmp_path / "results", "runs_root": tmp_path / "runs", "tables_root": tmp_path / "t"}
    with pytest.raises(InputError, match="tier: expected one of full, smoke, found 'huge'"):
        run_nightly(Nightly(["anml"], "huge", **roots), code=CLEAN)
    with pytest.raises(InputError, match="papers: expected some of damlrrm, anml, gpw, drml, cgml, found nope"):
        run_nightly(Nightly(["nope"], "smoke", **roots), code=CLEAN)
    assert not (tmp_path / "results").exists()


def test_a_paper_missing_its_data_stops_the_nightly_before_any_paper_trains(tmp_path, monkeypatch):
    monkeypatch.setenv("DML_WEIGHTS_DIR", str(tmp_path / "weights"))
    _tiny_anml(tmp_path)
    (tmp_path / "reproduce" / "anml" / "danml.yaml").unlink()  # anml: its Iris plan alone, ready to run (scikit-learn)
    cub = {**copy.deepcopy(RECIPE), "id": "ours-cub200"}  # damlrrm's: the real CUB and weights, not prepared here
    (tmp_path / "reproduce" / "damlrrm").mkdir()
    (tmp_path / "reproduce" / "damlrrm" / "ours.yaml").write_text(yaml.safe_dump(cub))
    with pytest.raises(InputError, match=r"paper damlrrm: missing inputs \(1 of 1 run blocked\):\n  dataset cub200"):
        run_nightly(
            Nightly(["anml", "damlrrm"], "full", results_root=tmp_path / "results", runs_root=tmp_path / "runs",
                    tables_root=tmp_path / "tables", recipes_dir=tmp_path / "reproduce", data_root=tmp_path / "data"),
            code=CLEAN,
        )  # fmt: skip
    assert not (tmp_path / "results").exists() and not (tmp_path / "runs").exists()  # anml did not start either


def _tiny_anml(tmp_path):
    """reproduce/anml/: one deep recipe (smoke: 4 steps) and the Iris plan for LANML+ alone (smoke: 2 splits)."""
    folder = tmp_path / "reproduce" / "anml"
    (folder / "linear").mkdir(parents=True)
    deep = {**copy.deepcopy(RECIPE), **copy.deepcopy(TINY_SMOKE), "id": "danml-cub200", "paper": "anml",
            "targets": [{"table": "table4", "row": "danml-cub200"}]}  # fmt: skip
    (folder / "danml.yaml").write_text(yaml.safe_dump(deep))
    plan = {"id": "table2-iris", "paper": "anml", "dataset": "Iris", "methods": ["lanml_plus"], "splits": 30,
            "seed": 0, "k_rule": "test", "grid_every": 1, "cv_folds": 5, "max_iterations": 300,
            "smoke": {"splits": 2, "grid_every": 100, "max_iterations": 30}}  # fmt: skip
    (folder / "linear" / "table2-iris.yaml").write_text(yaml.safe_dump(plan))
    return [
        "nightly", "--smoke", "--paper", "anml", "--no-progress", "--recipes", str(tmp_path / "reproduce"),
        "--results", str(tmp_path / "results"), "--runs", str(tmp_path / "runs"), "--tables", str(tmp_path / "tables"),
        "--data-root", str(tmp_path / "data"),
    ]  # fmt: skip


@pytest.mark.slow
@pytest.mark.usefixtures("glyph_data_root")
def test_two_nightlies_rerun_and_compare_and_a_planted_loss_regression_fails_the_third(tmp_path, capsys, monkeypatch):
    args = _tiny_anml(tmp_path)
    assert main([*args, "--name", "night-1"]) == 0
    out = capsys.readouterr().out
    assert "no earlier passing smoke nightly" in out and "nightly night-1: passed" in out
    assert (tmp_path / "results" / "nightly" / "night-1" / "smoke" / "anml" / "danml-cub200-seed0.json").is_file()

    assert main([*args, "--name", "night-2"]) == 0  # everything trained again, in its own folder
    out = capsys.readouterr().out
    assert "danml-cub200 seed 0: training (smoke)" in out and "lanml-plus-uci-iris seed 0: Table 2 protocol" in out
    assert "skipped" not in out and "compared with the previous passing smoke nightly night-1" in out
    assert "changed since night-1: 0 of 4 measured line(s)" in out
    history = read_history(history_path(tmp_path / "tables"))
    values = {name: lines.set_index("line")["value"].dropna() for name, lines in history.groupby("nightly")}
    assert len(values["night-1"]) == 3 + 1  # R@1, R@2, NMI of the deep run; the linear accuracy
    assert values["night-2"].equals(values["night-1"]), "the CPU smoke tier reproduces its numbers exactly"

    # A sign error in the LANML loss: the solver climbs it, and kNN on the learned metric drops far below.
    import dml_core.linear.methods as methods

    correct = methods.lanml_objectives

    def climbing(*arguments, **keywords):
        value, gradient = correct(*arguments, **keywords)
        return -value, -gradient

    monkeypatch.setattr(methods, "lanml_objectives", climbing)
    assert main([*args, "--name", "night-3"]) == 1
    out = capsys.readouterr().out
    assert "compared with the previous passing smoke nightly night-2" in out
    (failure,) = [line for line in out.splitlines() if line.startswith("  FAIL ")]
    assert failure.startswith("  FAIL anml table2 lanml-plus-uci-iris [lanml-plus-uci-iris] accuracy: ")
    assert "is below the previous nightly's 97.78 minus" in failure and "nightly night-3: FAILED" in out
    assert "changed since night-2: 1 of 4 measured line(s):\n  CHANGED anml table2/lanml-plus-uci-iris/" in out
    history = read_history(history_path(tmp_path / "tables"))
    assert dict(history.drop_duplicates("nightly")[["nightly", "passed"]].values) == {
        "night-1": True, "night-2": True, "night-3": False,
    }  # fmt: skip
    assert trend_path(tmp_path / "tables", "smoke", "anml").is_file()


def test_a_results_file_the_tables_refuse_fails_the_nightly(tmp_path, monkeypatch, capsys):
    from dml_core.runner import nightly
    from dml_core.tables.gate.join import Refusal

    _tiny_anml(tmp_path)
    (tmp_path / "reproduce" / "anml" / "danml.yaml").unlink()  # the Iris plan alone: seconds

    def pages_with_a_refusal(*arguments, **options):
        built = real_build_pages(*arguments, **options)
        forged = Refusal(tmp_path / "forged.json", "field selection: expected 1.01, found 60.0")
        built.papers["anml"].refused.append(forged)
        return built

    real_build_pages = nightly.build_pages
    monkeypatch.setattr(nightly, "build_pages", pages_with_a_refusal)
    roots = {"results_root": tmp_path / "results", "runs_root": tmp_path / "runs", "tables_root": tmp_path / "tables"}
    report = run_nightly(Nightly(["anml"], "smoke", **roots, recipes_dir=tmp_path / "reproduce"), code=CLEAN, now=NOW)
    assert not report.passed and report.refused == [
        f"{tmp_path / 'forged.json'}: field selection: expected 1.01, found 60.0"
    ]
    assert "REFUSED" in capsys.readouterr().out
