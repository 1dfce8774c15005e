"""Each committed full-tier page (tables/<key>.md, tables/fair.md and the index tables/README.md) is what the current
builders make of the committed results: a change of a recipe, reading or published table that a page shows cannot
land with the page left stale."""

import pytest

from dml_core.output_paths import REPOSITORY_ROOT, data_root
from dml_core.tables.builder.pages import build_pages
from dml_core.tables.gate.tolerances import load_tolerances
from dml_core.tables.pages import build
from dml_core.tier import Tier
from dml_core.vocabulary import FAIR_KEY, PAPER_KEYS

PAGES = [*PAPER_KEYS, FAIR_KEY, "README"]


@pytest.fixture(scope="module")
def rebuilt(tmp_path_factory):
    """Every page built from the committed results into a fresh tables folder, by the builder every command
    calls. The pages' links are relative to where they live: built at tmp/tables/ with tmp as the root they read
    as from the repository's tables/ (nothing is read through the root)."""
    root = tmp_path_factory.mktemp("repository")
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(build, "REPOSITORY_ROOT", root)
        build_pages([*PAPER_KEYS, FAIR_KEY], Tier.FULL, results_root=REPOSITORY_ROOT / "results",
                    tables_root=root / "tables", tolerances=load_tolerances(None), data_root=data_root(None),
                    log=lambda line: None)  # fmt: skip
    return root / "tables"


@pytest.mark.parametrize("page", PAGES)
def test_a_committed_page_is_what_the_builders_make_of_the_committed_results(page, rebuilt):
    committed = REPOSITORY_ROOT / "tables" / f"{page}.md"
    assert (rebuilt / f"{page}.md").read_text(encoding="utf-8") == committed.read_text(encoding="utf-8"), (
        f"tables/{page}.md is stale: rebuild it with `nox -s dml -- tables` and `nox -s dml -- tables fair`"
    )
