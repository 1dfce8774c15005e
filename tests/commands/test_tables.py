"""``dml tables`` through the real command line: builds every asked paper, ``--check`` exits 1 naming the
failing lines, and a cell under a reviewed waiver is marked in the table, listed apart and does not fail."""

import yaml

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
    written = [f"tables: {tmp_path / 'tables' / name}" for name in (f"{PAPER_KEY}.md", "README.md")]
    assert capsys.readouterr().out.splitlines() == written
    assert "55.1 → 40.0 (−15.1) ▼" in (tmp_path / "tables" / f"{PAPER_KEY}.md").read_text()
    assert (tmp_path / "tables" / f"{PAPER_KEY}.csv").is_file()


def test_check_fails_below_published_naming_the_line(tmp_path, capsys):
    _result(tmp_path, 53.5)
    assert main(_args(tmp_path, "--check")) == 1
    out = capsys.readouterr().out
    assert "check: 1 failing line(s):" in out
    assert "FAIL damlrrm table1 ours-cub200 [ours-cub200] R@1: 53.50 is below published 55.1 minus tolerance 1.5" in out


def test_a_waived_cell_is_marked_in_the_table_listed_apart_and_passes_the_check(tmp_path, capsys):
    _result(tmp_path, 53.5)
    papers = write_papers_dir(tmp_path)
    waiver = {"metrics": ["R@1"], "reviewed_in": "a test", "reviewed_on": "2026-01-31"}
    gap = {"table": "table1", "rows": ["ours-cub200"], "why": "printed wrong", "see": "README.md", "waiver": waiver}
    (papers / PAPER_KEY / "known_gaps.yaml").write_text(yaml.safe_dump({"paper": PAPER_KEY, "gaps": [gap]}))
    assert main(_args(tmp_path, "--check")) == 0
    out = capsys.readouterr().out
    assert "check: 0 failing line(s)" in out
    assert "waived: 1 line(s) below published under a reviewed waiver, not failed:" in out
    assert "WAIVED damlrrm table1 ours-cub200 [ours-cub200] R@1: 53.50 is below published 55.1 minus tolerance" in out
    page = (tmp_path / "tables" / f"{PAPER_KEY}.md").read_text()
    assert "55.1 → 53.5 (−1.6) ▼ waived [why?](" in page and "1 waived" in page
    assert "**Waived** (R@1; reviewed in a test, 2026-01-31)" in page
    gap["waiver"] = {**waiver, "metrics": ["R@1", "MAP@R"]}
    (papers / PAPER_KEY / "known_gaps.yaml").write_text(yaml.safe_dump({"paper": PAPER_KEY, "gaps": [gap]}))
    assert main(_args(tmp_path, "--check")) == 2
    assert "field gaps.0.waiver.metrics: expected metrics row ours-cub200 publishes" in capsys.readouterr().err


def test_a_bad_tolerances_file_is_a_one_line_error(tmp_path, capsys):
    bad = tmp_path / "tolerances.yaml"
    bad.write_text("default: -1\n")
    assert main(_args(tmp_path, "--tolerances", str(bad))) == 2
    assert (
        f"{bad}: invalid tolerances file: field default: Input should be greater than or equal to 0"
        in capsys.readouterr().err
    )


def test_tables_mini_writes_the_fair_page_or_the_papers_mini_pages_and_no_index(tmp_path, capsys):
    from dml_core.tier import Tier
    from tests.tables.fair.synthetic import fair_payload, write_fair_result

    for seed, r1 in enumerate([40.0, 42.0]):
        write_fair_result(tmp_path / "results", fair_payload("npair", "cub200", seed, r1, tier=Tier.MINI))
    folders = ["--results", str(tmp_path / "results"), "--tables", str(tmp_path / "tables")]
    assert main(["tables", "fair", "--mini", *folders]) == 0
    mini = tmp_path / "tables" / "mini"
    assert capsys.readouterr().out.splitlines() == [
        f"tables: {mini / name}" for name in ("fair.md", "fair.csv", "fair.png")
    ]
    assert "| npair | reference | PK 30×4 | 0, 1 | 200, 200 | 41.0 ± 1.4 |" in (mini / "fair.md").read_text()
    assert main(["tables", "--mini", "--paper", PAPER_KEY, *folders]) == 0  # as `reproduce --mini` builds it
    assert capsys.readouterr().out.splitlines() == [f"tables: {mini / PAPER_KEY}.md"]
    assert "No mini results yet" in (mini / f"{PAPER_KEY}.md").read_text()
    assert not (mini / "README.md").exists()
    assert main(["tables", "--mini", "--check", *folders]) == 2
    assert "--check: the nightly gate compares the papers' full or smoke tables" in capsys.readouterr().err
