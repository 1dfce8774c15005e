"""tables/README.md: every built paper's claims and per-table counts, read from the long forms."""

from dml_core.tables.gate.tolerances import Tolerances
from dml_core.tables.pages.build import build_paper_tables
from dml_core.tables.pages.index import write_index
from dml_core.tier import Tier
from tests.tables.synthetic import (
    PAPER_KEY,
    linear_payload,
    pinned_payload,
    write_linear_file,
    write_papers_dir,
    write_recipe,
    write_results_file,
)

TOLERANCES = Tolerances(default=1.5)


def _build(tmp_path, key, papers_dir=None):
    build_paper_tables(key, results_root=tmp_path / "results", tables_root=tmp_path / "tables",
                       recipes_dir=tmp_path / "reproduce", tolerances=TOLERANCES, tier=Tier.FULL, papers_dir=papers_dir,
                       draw_plots=False)  # fmt: skip


def test_the_index_summarises_a_built_paper(tmp_path):
    papers = write_papers_dir(tmp_path)
    write_recipe(tmp_path / "reproduce")
    write_results_file(tmp_path / "results", pinned_payload(curve=[{"R@1": 50.0, "R@2": 67.0, "NMI": 60.0}]))
    _build(tmp_path, PAPER_KEY, papers)
    text = write_index(tmp_path / "tables", TOLERANCES, tier=Tier.FULL, papers_dir=papers).read_text()
    assert text.startswith("# Reproduction tables\n")
    assert "## [damlrrm](damlrrm.md): A Synthetic Paper (TEST 2020)" in text
    assert "| table1  | 1 below" in text and "| table8  | training time: on the page" in text
    assert "Claims: no claims." in text  # the synthetic paper has no claims file


def test_the_index_carries_the_claims_verdicts(tmp_path):
    write_linear_file(tmp_path / "results", linear_payload((98.0, 100.0, 99.0)))
    _build(tmp_path, "anml")
    text = write_index(tmp_path / "tables", TOLERANCES, tier=Tier.FULL).read_text()
    assert "## [anml](anml.md): Adaptive Neighborhood Metric Learning (IEEE TPAMI 2022)" in text
    assert "Claims: 8 not run." in text and "| table2  | 1 within" in text
    assert "4 more tables with no run planned." in text  # the synthetic plan folder has no deep recipes


def test_an_empty_tables_folder_says_so(tmp_path):
    text = write_index(tmp_path / "tables", TOLERANCES, tier=Tier.SMOKE).read_text()
    assert "Smoke run" in text and "No paper has been built yet." in text


def test_the_index_lists_the_fair_study_with_its_verdicts_per_data_set(tmp_path):
    tables = tmp_path / "tables"
    tables.mkdir()
    (tables / "fair.csv").write_text(
        "dataset,method,kind,metric,verdict\n"
        "cub200,damlrrm,paper,,\ncub200,anml,paper,,\ncub200,contrastive,baseline,,\n"
        "cub200,triplet-semihard,baseline,,\ncars196,damlrrm,paper,,not run\n"
        # the verdicts counted are those of the declared hypotheses; exploratory ones and controls are not
        "cub200,damlrrm,hypothesis,R@1,better\ncub200,damlrrm,hypothesis,MAP@R,inconclusive\n"
        "cub200,anml,hypothesis,R@1,inconclusive\ncub200,contrastive,exploratory,R@1,worse\n"
        "cub200,multi-similarity-paired,control,,\ncub200,cgml,same-batch comparison,R@1,worse\n"
    )
    text = write_index(tables, TOLERANCES, tier=Tier.FULL).read_text()
    assert "No paper has been built yet." not in text
    assert "## [fair](fair.md): the five papers' methods and the classic baselines under one protocol" in text
    assert "| cub200     | 4 of 4        | 2 inconclusive · 1 better |" in text
    assert "| cars196    | 0 of 1        | not run" in text
