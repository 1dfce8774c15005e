"""``dml tables`` and the results gate: a forged results file is listed as refused (on stderr and on the page),
never shown as a row, and ``--check`` fails on it; the index check says once what it could not compare."""

import json

from dml_core.cli import main
from dml_core.data.index import IndexRow, index_hashes, write_index
from tests.tables.synthetic import PAPER_KEY, pinned_payload, write_papers_dir, write_recipe, write_results_file


def _args(tmp_path, *extra):
    return [
        "tables", "--paper", PAPER_KEY, "--results", str(tmp_path / "results"), "--tables", str(tmp_path / "tables"),
        "--recipes", str(tmp_path / "reproduce"), "--papers-dir", str(write_papers_dir(tmp_path)), "--no-plots",
        "--data-root", str(tmp_path / "data"), *extra,
    ]  # fmt: skip


def test_a_forged_file_is_refused_not_a_row_and_fails_the_check(tmp_path, capsys):
    write_recipe(tmp_path / "reproduce")
    write_results_file(tmp_path / "results", pinned_payload(seed=0, curve=[{"R@1": 56.0, "R@2": 67.0, "NMI": 60.0}]))
    forged = pinned_payload(seed=1, curve=[{"R@1": 1.01, "R@2": 2.0, "NMI": 3.0}])
    forged["selection"]["metrics"]["R@1"] = forged["selections"]["best_r1"]["metrics"]["R@1"] = 60.0
    path = tmp_path / "results" / PAPER_KEY / "ours-cub200-seed1.json"
    path.write_text(json.dumps(forged))

    assert main(_args(tmp_path)) == 0  # the tables are built; the forged file is in none of them
    err = capsys.readouterr().err
    reason = "field selection.metrics.R@1: expected 1.01 (the evaluation at iteration 10, rule best_r1), found 60.0"
    assert f"REFUSED {path}: {reason}" in err
    page = (tmp_path / "tables" / f"{PAPER_KEY}.md").read_text()
    assert "## Results gate\n\nRefused, shown in no table (1 results file(s);" in page
    assert f"- `ours-cub200-seed1.json`: {reason}" in page
    assert "55.1 → 56.0 (+0.9) ✓" in page  # seed 0 alone: no mean with the forged 60

    assert main(_args(tmp_path, "--check")) == 1
    out = capsys.readouterr().out
    assert "check: 0 failing line(s)" in out
    assert "check: 1 results file(s) refused by the results gate (on stderr): fails" in out


def test_the_index_is_checked_where_the_data_is_and_noted_where_it_is_not(tmp_path, capsys):
    write_recipe(tmp_path / "reproduce")
    rows = [IndexRow("001.Bird/a.jpg", 1, "train"), IndexRow("101.Gull/b.jpg", 101, "test")]
    payload = pinned_payload(curve=[{"R@1": 56.0, "R@2": 67.0, "NMI": 60.0}])  # within the tolerance
    payload["index_hashes"] = index_hashes(rows)
    write_results_file(tmp_path / "results", payload)
    assert main(_args(tmp_path, "--check")) == 0
    assert "note: index hashes not checked for cub200: the data is not prepared on this machine" in (
        capsys.readouterr().err
    )
    write_index(tmp_path / "data" / "cub200", rows)
    assert main(_args(tmp_path, "--check")) == 0
    assert "note:" not in capsys.readouterr().err
    write_index(tmp_path / "data" / "cub200", [rows[0], IndexRow("101.Gull/b.jpg", 101, "train")])
    assert main(_args(tmp_path, "--check")) == 1
    assert "field index_hashes.test: expected " in capsys.readouterr().err
