"""Each committed mini page is what its committed results files build: a reader can rebuild the page from
``results/mini/<key>/`` and check every number against the file it came from."""

import pytest

from dml_core.output_paths import REPOSITORY_ROOT, tables_markdown
from dml_core.runner.inline import PaperRun
from dml_core.runner.preflight import results_of_other_recipes
from dml_core.tables.builder.pages import build_pages
from dml_core.tables.gate.tolerances import load_tolerances
from dml_core.tier import Tier

PAGES = sorted(path.stem for path in (REPOSITORY_ROOT / "tables" / "mini").glob("*.md"))


def _has_results(key: str) -> bool:
    return any((REPOSITORY_ROOT / "results" / "mini" / key).glob("*.json"))


def test_every_committed_mini_page_comes_with_its_results():
    assert {"anml", "cgml", "damlrrm", "drml", "gpw"} <= set(PAGES)
    missing = sorted(key for key in PAGES if not _has_results(key))
    assert not missing, f"tables/mini/<key>.md committed without results/mini/<key>/*.json: {missing}"


@pytest.mark.parametrize("key", [key for key in PAGES if _has_results(key)])
def test_a_committed_mini_page_is_what_its_committed_results_build(key, tmp_path):
    results = REPOSITORY_ROOT / "results"
    build_pages([key], Tier.MINI, results_root=results, tables_root=tmp_path, tolerances=load_tolerances(None),
                log=lambda line: None)  # fmt: skip
    rebuilt = tables_markdown(tmp_path, key, Tier.MINI)
    committed = REPOSITORY_ROOT / "tables" / "mini" / f"{key}.md"
    assert rebuilt.read_text(encoding="utf-8") == committed.read_text(encoding="utf-8")


@pytest.mark.parametrize("key", [key for key in PAGES if _has_results(key)])
def test_committed_mini_results_are_of_the_recipes_as_they_train_now(key, tmp_path):
    """A default, recipe or shrink changed without re-measuring leaves results of another recipe behind its page
    (``dml reproduce KEY --mini`` would refuse to run beside them without --rerun)."""
    results = REPOSITORY_ROOT / "results"
    paper = PaperRun(key, tier=Tier.MINI, runs_root=tmp_path, results_root=results, tables_root=tmp_path)
    plans, _ = paper.planned()
    stale = results_of_other_recipes(plans)
    assert not stale, f"re-measure with `nox -s dml -- reproduce {key} --mini --rerun --only ...`:\n" + "\n".join(stale)
