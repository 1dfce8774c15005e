"""Each committed mini page is what its committed results files build: a reader can rebuild the page from
``results/mini/<key>/`` and check every number against the file it came from."""

import pytest

from dml_core.output_paths import RECIPES_DIR, REPOSITORY_ROOT
from dml_core.tables.mini import build_mini_page
from dml_core.vocabulary import PAPER_KEYS

COMMITTED = [key for key in PAPER_KEYS if (REPOSITORY_ROOT / "results" / "mini" / key).is_dir()]


def test_the_drml_page_is_committed_with_its_results():
    assert "drml" in COMMITTED


@pytest.mark.parametrize("key", COMMITTED)
def test_a_committed_mini_page_is_what_its_committed_results_build(key, tmp_path):
    page = build_mini_page(key, REPOSITORY_ROOT / "results", tmp_path, RECIPES_DIR)
    committed = REPOSITORY_ROOT / "tables" / "mini" / f"{key}.md"
    assert page.markdown_path.read_text(encoding="utf-8") == committed.read_text(encoding="utf-8")


def test_the_committed_fair_mini_page_is_what_its_committed_results_build(tmp_path, monkeypatch):
    from pathlib import Path

    from dml_core.tables.fair import write_fair_tables
    from dml_core.tier import Tier

    monkeypatch.chdir(REPOSITORY_ROOT)  # the page names its results folder as `dml reproduce` gave it: relative
    written = write_fair_tables(Path("results"), tmp_path, Tier.MINI)
    built = next(path for path in written if path.suffix == ".md")
    committed = REPOSITORY_ROOT / "tables" / "mini" / "fair.md"
    assert built.read_text(encoding="utf-8") == committed.read_text(encoding="utf-8")
