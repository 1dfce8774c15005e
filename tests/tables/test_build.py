"""tables/<key>.md end to end from synthetic results: header (selection, protocol, commit, GPU), the
comparison with mean ± std, not-run rows, the training-time table, plots, and the smoke banner."""

import pytest

from dml_core.tables import build_paper_tables
from dml_core.tables.tolerances import Tolerances
from tests.tables import synthetic
from tests.tables.synthetic import PAPER_KEY, results_payload, write_papers_dir, write_recipe, write_results_file

TOLERANCES = Tolerances(default=1.5)
PNG_MAGIC = b"\x89PNG\r\n\x1a\n"


def _build(tmp_path, smoke=False, draw_plots=True):
    return build_paper_tables(
        PAPER_KEY,
        results_root=tmp_path / "results",
        tables_root=tmp_path / "tables",
        recipes_dir=tmp_path / "reproduce",
        tolerances=TOLERANCES,
        smoke=smoke,
        papers_dir=write_papers_dir(tmp_path),
        draw_plots=draw_plots,
    )


def _table(text: str, heading: str) -> list[dict[str, str]]:
    """The pipe table under ``heading`` as one dict per line (column name -> cell text)."""
    block = [line for line in text.split(heading)[1].split("\n\n")[1].splitlines()]
    names = [cell.strip() for cell in block[0].strip("|").split("|")]
    return [dict(zip(names, (c.strip() for c in line.strip("|").split("|")), strict=True)) for line in block[2:]]


@pytest.fixture
def results(tmp_path):
    write_recipe(tmp_path / "reproduce")
    write_recipe(tmp_path / "reproduce", id="lifted-cub200", targets=[{"table": "table1", "row": "lifted-cub200"}])
    for seed, r1 in ((0, 54.0), (1, 56.0)):
        curve = [{"R@1": r1 - 5, "R@2": 60.0, "NMI": 58.0}, {"R@1": r1, "R@2": 66.0 + seed * 2, "NMI": 60.0}]
        write_results_file(tmp_path / "results", results_payload(seed=seed, curve=curve, commit="feedc0ffee" * 2))
    return tmp_path


def test_the_markdown_says_how_the_numbers_were_obtained_and_compares_them(results):
    built = _build(results)
    assert built.markdown_path == results / "tables" / f"{PAPER_KEY}.md"
    text = built.markdown_path.read_text()
    assert text.startswith("# Reproduction: A Synthetic Paper (TEST 2020)")
    assert "Smoke run" not in text
    assert "best_r1: the evaluation with the best test R@1" in text
    assert "cub200: single-set retrieval, self excluded by index, L2-normalised yes, Recall@K for K in [1, 2]" in text
    assert "k-means faiss (20 iterations, seed 0), NMI arithmetic" in text
    assert "`feedc0ffeefe`" in text and "NVIDIA H100" in text
    assert "Published rows no recipe targets (not shown): 0." in text
    assert "recipes under reproduce/damlrrm/: 2; results files: 2 (of 1 recipes)" in text
    table1 = {(cells["row"], cells["metric"]): cells for cells in _table(text, "## table1: Retrieval on CUB")}
    ours = table1[("ours-cub200", "R@1")]
    assert (ours["seeds"], ours["published"], ours["reproduced"], ours["delta"]) == (
        "0,1",
        "55.1",
        "55.00 ± 1.41",
        "-0.10",
    )
    assert ours["status"] == "within tolerance"
    assert table1[("ours-cub200", "R@2")]["published"] == "67.0"  # published numbers as printed
    lifted = table1[("lifted-cub200", "R@1")]
    assert (lifted["reproduced"], lifted["delta"], lifted["status"]) == ("—", "—", "not run")
    [timing] = _table(text, "## Training time")
    assert timing == {
        "recipe": "ours-cub200", "dataset": "cub200", "device": "NVIDIA H100", "seeds": "0,1", "iterations": "200",
        "published it/s": "0.84", "ours it/s": "2", "published hours": "13.2", "ours hours": "2",
    }  # fmt: skip
    assert f"![recall-table1-ours-cub200-ours-cub200]({PAPER_KEY}/recall-table1-ours-cub200-ours-cub200.png)" in text
    assert f"![curve-ours-cub200]({PAPER_KEY}/curve-ours-cub200.png)" in text


def test_plots_are_pngs_and_identical_numbers_give_identical_bytes(results):
    _build(results)
    folder = results / "tables" / PAPER_KEY
    pngs = sorted(path.name for path in folder.glob("*.png"))
    assert pngs == ["curve-ours-cub200.png", "recall-table1-ours-cub200-ours-cub200.png"]  # lifted: not run
    first = {name: (folder / name).read_bytes() for name in pngs}
    assert all(data.startswith(PNG_MAGIC) for data in first.values())
    _build(results)
    assert {name: (folder / name).read_bytes() for name in pngs} == first


def test_smoke_tables_go_to_their_own_folder_with_the_banner(tmp_path):
    write_recipe(tmp_path / "reproduce")
    write_results_file(tmp_path / "results", results_payload(smoke=True, gpu=None))
    built = _build(tmp_path, smoke=True, draw_plots=False)
    assert built.markdown_path == tmp_path / "tables" / "smoke" / f"{PAPER_KEY}.md"
    text = built.markdown_path.read_text()
    assert "**Smoke run: these numbers are NOT comparable with the paper.**" in text
    assert "no GPU (cpu)" in text
    assert not (tmp_path / "tables" / "smoke" / PAPER_KEY).exists()


def test_a_resumed_run_lists_the_commit_of_each_start(tmp_path):
    write_recipe(tmp_path / "reproduce")
    payload = results_payload(commit="aaaaaaaaaaaaaaaa")
    payload["git"] = {
        "commit": "aaaaaaaaaaaaaaaa", "dirty": False,
        "segments": [{"from": 0, "commit": "aaaaaaaaaaaaaaaa", "dirty": False},
                     {"from": 500, "commit": "bbbbbbbbbbbbbbbb", "dirty": True}],
    }  # fmt: skip
    write_results_file(tmp_path / "results", payload)
    text = _build(tmp_path, draw_plots=False).markdown_path.read_text()
    assert "- Git commit(s): `aaaaaaaaaaaa`, `bbbbbbbbbbbb` (dirty)" in text


def test_a_paper_with_nothing_yet_still_gets_a_file(tmp_path):
    text = _build(tmp_path, draw_plots=False).markdown_path.read_text()
    assert "No recipe targets a row of this paper yet" in text and "not shown): 3." in text


@pytest.mark.parametrize("smoke", [False, True])
def test_linear_lines_show_the_published_std_a_note_and_their_runs(tmp_path, smoke):
    synthetic.write_linear_file(tmp_path / "results", synthetic.linear_payload((96.0, 100.0, 98.0), smoke=smoke))
    built = build_paper_tables(
        "anml",
        results_root=tmp_path / "results",
        tables_root=tmp_path / "tables",
        recipes_dir=tmp_path / "reproduce",  # no recipes or plans: only the results file's row is shown
        tolerances=TOLERANCES,
        smoke=smoke,
        draw_plots=True,
    )
    text = built.markdown_path.read_text()
    [line] = _table(text, "## table2: Comparison of Different Methods on 15 Data Sets.")
    assert line == {
        "row": "lanml-plus-uci-iris", "method": "LANML+", "dataset": "uci:iris", "recipe": "lanml-plus-uci-iris",
        "seeds": "0", "metric": "accuracy", "published": "99.89 ± 2.09", "reproduced": "98.00 ± 2.00",
        "delta": "-1.89", "status": "below",
        "note": "NOT the paper protocol: 3 splits (seeds 0..2), 5-fold CV, K rule test, THINNED grid (grid-every 5: "
        "1 point)",
    }  # fmt: skip
    [run] = _table(text, "## Linear runs (Table 2 protocol)")
    assert (run["run"], run["plan"], run["accuracy"], run["other K rule"], run["seconds"]) == (
        "lanml-plus-uci-iris", "table2-iris", "98.00 ± 2.00", "cv: 90.00 ± 0.00", "0.3",
    )  # fmt: skip
    assert "Linear runs (Table 2 protocol, 1 results files)" in text
    assert ("The linear (Table 2) smoke lines use the real data set" in text) is smoke
    assert "## Training time" not in text and "## Training curves" not in text
    assert not list(built.markdown_path.with_suffix("").glob("*.png"))  # no Recall@K, no training curve
