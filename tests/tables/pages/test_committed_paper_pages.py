"""Each committed full-tier page (tables/<key>.md, tables/fair.md and the index tables/README.md) is what the current
builders make of the committed results: a change of a recipe, reading or published table that a page shows cannot
land with the page left stale."""

import pytest

from dml_core.output_paths import RECIPES_DIR, REPOSITORY_ROOT, data_root
from dml_core.tables.fair.build import write_fair_tables
from dml_core.tables.gate.tolerances import load_tolerances
from dml_core.tables.pages import build
from dml_core.tables.pages.build import build_paper_tables
from dml_core.tables.pages.index import write_index
from dml_core.tier import Tier
from dml_core.vocabulary import FAIR_KEY, PAPER_KEYS

PAGES = [*PAPER_KEYS, FAIR_KEY, "README"]


@pytest.fixture(scope="module")
def rebuilt(tmp_path_factory):
    """Every page built from the committed results into a fresh tables folder. The pages' links are relative to
    where they live: built at tmp/tables/ with tmp as the root they read as from the repository's tables/ (nothing
    is read through the root)."""
    root = tmp_path_factory.mktemp("repository")
    tables, results, tolerances = root / "tables", REPOSITORY_ROOT / "results", load_tolerances(None)
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(build, "REPOSITORY_ROOT", root)
        for key in PAPER_KEYS:
            build_paper_tables(key, results_root=results, tables_root=tables, recipes_dir=RECIPES_DIR,
                               tolerances=tolerances, tier=Tier.FULL, data_root=data_root(None))  # fmt: skip
    write_fair_tables(results, tables, Tier.FULL)
    write_index(tables, tolerances, Tier.FULL)
    return tables


@pytest.mark.parametrize("page", PAGES)
def test_a_committed_page_is_what_the_builders_make_of_the_committed_results(page, rebuilt):
    committed = REPOSITORY_ROOT / "tables" / f"{page}.md"
    assert (rebuilt / f"{page}.md").read_text(encoding="utf-8") == committed.read_text(encoding="utf-8"), (
        f"tables/{page}.md is stale: rebuild it with `nox -s dml -- tables` and `nox -s dml -- tables fair`"
    )
