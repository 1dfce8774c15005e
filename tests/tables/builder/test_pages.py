"""The one page builder: each key at each tier gets its page (a paper's, its mini page, the fair study's), the index
follows at the full and smoke tiers, and every caller gets the same lines: a line per file written, the results
gate's refusals and notes apart."""

import json

import pytest

from dml_core.tables.builder.pages import build_pages
from dml_core.tables.gate.tolerances import Tolerances
from dml_core.tier import Tier
from dml_core.vocabulary import FAIR_KEY
from tests.tables.fair.synthetic import fair_payload, write_fair_result
from tests.tables.synthetic import PAPER_KEY, pinned_payload, write_papers_dir, write_recipe, write_results_file


def _build(root, keys, tier, **options):
    lines, warnings = [], []
    built = build_pages(
        keys, tier, results_root=root / "results", tables_root=root / "tables", tolerances=Tolerances(default=1.5),
        recipes_dir=root / "reproduce", papers_dir=write_papers_dir(root), draw_plots=False, log=lines.append,
        warn=warnings.append, **options,
    )  # fmt: skip
    return built, lines, warnings


@pytest.mark.parametrize("tier", [Tier.FULL, Tier.SMOKE])
def test_a_paper_gets_its_page_then_the_index_and_the_gate_speaks_apart(tmp_path, tier):
    write_recipe(tmp_path / "reproduce")
    smoke = tier == Tier.SMOKE
    curve = {"R@1": 56.0, "R@2": 67.0, "NMI": 60.0, **({"R@4": 70.0, "R@8": 75.0} if smoke else {})}  # its protocol
    payload = pinned_payload(seed=0, smoke=smoke, curve=[curve])
    forged = write_results_file(tmp_path / "results", payload).with_name("ours-cub200-seed1.json")
    forged.write_text(json.dumps({**payload, "seed": 1}))
    built, lines, warnings = _build(tmp_path, [PAPER_KEY], tier)
    page = tmp_path / "tables" / ("smoke" if smoke else "") / f"{PAPER_KEY}.md"
    assert lines == [f"tables: {page}", f"tables: {page.with_name('README.md')}"]
    assert built.index == page.with_name("README.md") and built.long_forms == {PAPER_KEY: page.with_suffix(".csv")}
    assert [refusal.path for refusal in built.refused] == [forged]
    assert warnings == [f"results gate: REFUSED {built.refused[0]}", "results gate: note: index hashes not checked: "
                        "no data root given"]  # fmt: skip


def test_the_mini_tier_builds_the_mini_pages_and_no_index(tmp_path):
    built, lines, warnings = _build(tmp_path, [PAPER_KEY], Tier.MINI)
    page = tmp_path / "tables" / "mini" / f"{PAPER_KEY}.md"
    assert lines == [f"tables: {page}"] and warnings == []
    assert built.mini[PAPER_KEY].markdown_path == page and built.index is None and not built.papers
    assert not page.with_name("README.md").exists()


def test_the_fair_study_gets_its_page_and_the_index_lists_it(tmp_path):
    for seed, r1 in enumerate([40.0, 42.0]):
        write_fair_result(tmp_path / "results", fair_payload("npair", "cub200", seed, r1))
    lines, warnings = [], []
    built = build_pages(
        [FAIR_KEY], Tier.FULL, results_root=tmp_path / "results", tables_root=tmp_path / "tables",
        tolerances=Tolerances(default=1.5), log=lines.append, warn=warnings.append,
    )  # fmt: skip
    written = [tmp_path / "tables" / name for name in ("fair.md", "fair.csv", "fair.png", "README.md")]
    assert lines == [f"tables: {path}" for path in written] and warnings == []
    assert built.fair == written[:3] and built.index == written[3]
    assert "## [fair](fair.md)" in built.index.read_text()
