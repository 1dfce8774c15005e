"""Known gaps: the repository's files load, and a gap naming a missing row or file is refused."""

import pytest
import yaml

from dml_core.errors import InputError
from dml_core.published import PAPER_KEYS, load_published
from dml_core.tables.known_gaps import load_known_gaps
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
