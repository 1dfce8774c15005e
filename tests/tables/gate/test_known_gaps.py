"""Known gaps: the repository's files load, a gap naming a missing row or file is refused, and a waiver marks
exactly its cells that are below published (and names what is wrong with a bad one)."""

import pandas as pd
import pytest
import yaml

from dml_core.errors import InputError
from dml_core.published import load_published
from dml_core.tables.gate.join import BELOW, WAIVED, WITHIN
from dml_core.tables.gate.known_gaps import apply_waivers, load_known_gaps
from dml_core.vocabulary import PAPER_KEYS
from tests.tables.synthetic import PAPER_KEY, write_papers_dir


@pytest.mark.parametrize("key", PAPER_KEYS)
def test_the_repository_files_load(key):
    gaps = load_known_gaps(load_published(key))
    assert gaps.paper == key


def test_the_wine_baselines_are_explained():
    gap = load_known_gaps(load_published("anml")).for_row("table2", "nca-uci-wine")
    assert gap is not None and gap.see.startswith("reproduce/anml/table2_linear.md#")


def test_a_gap_must_name_real_rows_and_a_real_file(tmp_path):
    papers = write_papers_dir(tmp_path)
    paper = load_published(PAPER_KEY, papers)
    (tmp_path / "notes.md").write_text("# notes\n")
    path = papers / PAPER_KEY / "known_gaps.yaml"
    gap = {"table": "table1", "rows": ["ours-cub200"], "why": "because", "see": "notes.md#notes"}
    path.write_text(yaml.safe_dump({"paper": PAPER_KEY, "gaps": [gap]}))
    assert load_known_gaps(paper, papers, repository=tmp_path).for_row("table1", "ours-cub200").why == "because"
    path.write_text(yaml.safe_dump({"paper": PAPER_KEY, "gaps": [{**gap, "rows": ["nope"]}]}))
    with pytest.raises(InputError, match=r"known_gaps.yaml: field gaps.0.rows: .*no row 'nope'"):
        load_known_gaps(paper, papers, repository=tmp_path)
    path.write_text(yaml.safe_dump({"paper": PAPER_KEY, "gaps": [{**gap, "see": "missing.md"}]}))
    with pytest.raises(InputError, match=r"field gaps.0.see: expected a file of the repository"):
        load_known_gaps(paper, papers, repository=tmp_path)
    path.write_text(yaml.safe_dump({"paper": PAPER_KEY, "gaps": [{**gap, "see": "/abs/notes.md"}]}))
    with pytest.raises(InputError, match=r"field gaps.0.see"):
        load_known_gaps(paper, papers, repository=tmp_path)


def test_the_iris_lanml_rows_carry_a_reviewed_waiver_of_their_accuracy():
    gaps = load_known_gaps(load_published("anml"))
    for row in ("lanml-plus-uci-iris", "lanml-minus-uci-iris"):
        gap = gaps.waiver_for("table2", row, "accuracy")
        assert gap is not None and gap.waiver.reviewed_in and "cannot both be right" in gap.why
    assert gaps.waiver_for("table2", "nca-uci-wine", "accuracy") is None  # explained, not waived


def test_a_waiver_marks_only_its_cells_below_published(tmp_path):
    papers = write_papers_dir(tmp_path)
    paper = load_published(PAPER_KEY, papers)
    (tmp_path / "notes.md").write_text("# notes\n")
    waiver = {"metrics": ["R@1"], "reviewed_in": "issue 1", "reviewed_on": "2026-01-31"}
    gap = {"table": "table1", "rows": ["ours-cub200"], "why": "misprint", "see": "notes.md", "waiver": waiver}
    path = papers / PAPER_KEY / "known_gaps.yaml"
    path.write_text(yaml.safe_dump({"paper": PAPER_KEY, "gaps": [gap]}))
    gaps = load_known_gaps(paper, papers, repository=tmp_path)
    frame = pd.DataFrame(
        {"table": "table1", "row": ["ours-cub200", "ours-cub200", "ours-cub200", "lifted-cub200"],
         "metric": ["R@1", "R@2", "R@1", "R@1"], "status": [BELOW, BELOW, WITHIN, BELOW]}
    )  # fmt: skip
    assert list(apply_waivers(frame, gaps)["status"]) == [WAIVED, BELOW, WITHIN, BELOW]
    assert list(frame["status"]) == [BELOW, BELOW, WITHIN, BELOW]  # the input is left as it was
    for bad, message in (
        ({**waiver, "metrics": ["MAP@R"]}, r"field gaps.0.waiver.metrics: expected metrics row ours-cub200 publishes"),
        ({**waiver, "reviewed_on": "soon"}, r"invalid known gaps file: field gaps.0.waiver.reviewed_on: "),
        ({"metrics": ["R@1"]}, r"field gaps.0.waiver.reviewed_in: Field required"),
    ):
        path.write_text(yaml.safe_dump({"paper": PAPER_KEY, "gaps": [{**gap, "waiver": bad}]}))
        with pytest.raises(InputError, match=message):
            load_known_gaps(paper, papers, repository=tmp_path)
