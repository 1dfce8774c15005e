"""``dml tables`` through the real command line: builds every asked paper, ``--check`` exits 1 naming the
failing lines, the nightly summary is written only by a passing check and read back by the next one."""

import json

from dml_core.cli import main
from tests.tables.synthetic import PAPER_KEY, pinned_payload, write_papers_dir, write_recipe, write_results_file


def _args(tmp_path, *extra):
    return [
        "tables", "--paper", PAPER_KEY, "--results", str(tmp_path / "results"), "--tables", str(tmp_path / "tables"),
        "--recipes", str(tmp_path / "reproduce"), "--papers-dir", str(write_papers_dir(tmp_path)), "--no-plots",
        *extra,
    ]  # fmt: skip


def _result(tmp_path, r1, seed=0):
    write_recipe(tmp_path / "reproduce")  # the run the results gate checks the file against
    write_results_file(tmp_path / "results", pinned_payload(seed=seed, curve=[{"R@1": r1, "R@2": 67.0, "NMI": 60.0}]))


def test_tables_without_check_always_succeeds_and_writes_the_file(tmp_path, capsys):
    write_recipe(tmp_path / "reproduce")
    _result(tmp_path, 40.0)
    assert main(_args(tmp_path)) == 0
    written = [str(tmp_path / "tables" / name) for name in (f"{PAPER_KEY}.md", "README.md")]
    assert capsys.readouterr().out.split() == written
    assert "55.1 → 40.0 (−15.1) ▼" in (tmp_path / "tables" / f"{PAPER_KEY}.md").read_text()
    assert (tmp_path / "tables" / f"{PAPER_KEY}.csv").is_file()


def test_check_fails_below_published_and_keeps_the_previous_summary(tmp_path, capsys):
    _result(tmp_path, 53.5)
    summary = tmp_path / "nightly" / "summary.json"
    assert main(_args(tmp_path, "--check", "--previous", str(summary.parent), "--summary", str(summary))) == 1
    out = capsys.readouterr().out
    assert f"no previous nightly summary at {summary}" in out
    assert "check: 1 failing line(s):" in out
    assert "FAIL damlrrm table1 ours-cub200 [ours-cub200] R@1: 53.50 is below published 55.1 minus tolerance 1.5" in out
    assert not summary.exists()


def test_a_passing_check_writes_the_summary_and_the_next_nightly_compares_with_it(tmp_path, capsys):
    _result(tmp_path, 58.0)
    summary = tmp_path / "nightly" / "summary.json"
    args = _args(tmp_path, "--check", "--previous", str(summary.parent), "--summary", str(summary))
    assert main(args) == 0
    assert "check: 0 failing line(s)" in capsys.readouterr().out
    values = json.loads(summary.read_text())["values"][PAPER_KEY]
    assert values["table1/ours-cub200/ours-cub200/R@1"] == 58.0
    _result(tmp_path, 56.0)  # still above published - 1.5, but 2 points below last night
    assert main(args) == 1
    assert "below the previous nightly's 58.00 minus tolerance 1.5 (change -2.00)" in capsys.readouterr().out
    assert json.loads(summary.read_text())["values"][PAPER_KEY]["table1/ours-cub200/ours-cub200/R@1"] == 58.0


def test_a_bad_tolerances_file_is_a_one_line_error(tmp_path, capsys):
    bad = tmp_path / "tolerances.yaml"
    bad.write_text("default: -1\n")
    assert main(_args(tmp_path, "--tolerances", str(bad))) == 2
    assert f"{bad}: field default: Input should be greater than or equal to 0" in capsys.readouterr().err
