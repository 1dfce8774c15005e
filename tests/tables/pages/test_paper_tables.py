"""Tables in the paper's shape: every printed row in order (quoted ones marked), metrics as columns, compact
published → reproduced (gap) cells, a line per reading, the two multi-data-set shapes, links to known gaps."""

import copy
from pathlib import Path

import pytest

from dml_core.published import load_published
from dml_core.tables.gate.join import compared_metrics, join, load_results_folder
from dml_core.tables.gate.known_gaps import KnownGap, KnownGaps
from dml_core.tables.gate.tolerances import Tolerances
from dml_core.tables.pages.paper_tables import has_reproduced_number, paper_shaped
from dml_core.tier import Tier
from tests.tables.synthetic import (
    PAPER_KEY,
    PUBLISHED,
    linear_payload,
    results_payload,
    write_linear_file,
    write_papers_dir,
    write_results_file,
)

TOLERANCES = Tolerances(default=1.5)
NO_GAPS = KnownGaps(paper=PAPER_KEY)


def _records(frame):
    return frame.to_dict("records")


def test_every_printed_row_in_order_with_ours_beside_the_published(tmp_path):
    published = copy.deepcopy(PUBLISHED)
    published["tables"][0]["rows"][0]["quoted"] = True
    paper = load_published(PAPER_KEY, write_papers_dir(tmp_path, published))
    for seed, r1 in ((0, 53.0), (1, 54.0), (2, 55.0)):
        write_results_file(tmp_path, results_payload(seed=seed, curve=[{"R@1": r1, "R@2": 67.0, "NMI": 60.0}]))
    variant = results_payload(seed=0, curve=[{"R@1": 50.0, "R@2": 60.0, "NMI": 58.0}], variant="damlrrm.lr=1e-3")
    write_results_file(tmp_path, variant)
    frame = join(paper, load_results_folder(tmp_path / PAPER_KEY, tier=Tier.FULL), TOLERANCES)
    shown = paper_shaped(paper.table("table1"), frame[frame["table"] == "table1"], NO_GAPS, tmp_path, tmp_path)
    assert _records(shown) == [
        {"method": "Lifted · *(quoted)*", "R@1": "43.6", "NMI": "56.5", "R@2": "—", "runs": ""},
        {"method": "OURS", "R@1": "55.1 → 54.0 ± 1.0 (−1.1) ✓", "NMI": "60.0 → 60.0 ± 0.0 (+0.0) ✓",
         "R@2": "67.0 → 67.0 ± 0.0 (+0.0) ✓", "runs": "3 seeds"},
        {"method": "OURS · readings damlrrm.lr=1e-3", "R@1": "55.1 → 50.0 (−5.1) ▼",
         "NMI": "60.0 → 58.0 (−2.0) ▼", "R@2": "67.0 → 60.0 (−7.0) ▼", "runs": "1 seed"},
    ]  # fmt: skip


def test_a_planned_row_without_results_shows_the_published_numbers_and_says_not_run(tmp_path):
    paper = load_published(PAPER_KEY, write_papers_dir(tmp_path))
    frame = join(paper, [], TOLERANCES, {("table1", "lifted-cub200"): ["lifted-cub200"]})
    shown = paper_shaped(paper.table("table1"), frame, NO_GAPS, tmp_path, tmp_path)
    assert _records(shown)[0] == {"method": "Lifted", "R@1": "43.6", "NMI": "56.5", "R@2": "—", "runs": "not run"}
    assert not has_reproduced_number(frame)


WIDE = {
    "paper": {"key": "gpw", "title": "Wide", "venue": "TEST", "year": 2020},
    "tables": [{"id": "table4", "caption": "Two data sets side by side", "kind": "main", "rows": [
        {"id": "ms-cub200", "method": "MS", "proposed": False, "quoted": True, "dataset": "cub200",
         "metrics": {"R@1": 65.7, "R@2": 77.0}},
        {"id": "ms-cars196", "method": "MS", "proposed": False, "quoted": True, "dataset": "cars196",
         "metrics": {"R@1": 84.1, "R@2": 90.4}},
        {"id": "pair-p-cub200", "method": "Pair-P", "proposed": True, "dataset": "cub200", "setting": "p, q = 0, 1",
         "metrics": {"R@1": 69.5, "R@2": 79.9}},
        {"id": "pair-p-cars196", "method": "Pair-P", "proposed": True, "dataset": "cars196", "setting": "p, q = 0, 1",
         "metrics": {"R@1": 86.3, "R@2": 91.8}},
    ]}],
}  # fmt: skip


def test_a_table_over_two_data_sets_keeps_one_line_per_method(tmp_path):
    folder = tmp_path / "papers" / "gpw"
    folder.mkdir(parents=True)
    (folder / "published.yaml").write_text(__import__("yaml").safe_dump(WIDE))
    paper = load_published("gpw", tmp_path / "papers")
    payload = results_payload("pair-p-cub200", paper="gpw", targets=[{"table": "table4", "row": "pair-p-cub200"}],
                              curve=[{"R@1": 68.0, "R@2": 80.0}])  # fmt: skip
    write_results_file(tmp_path, payload)
    frame = join(paper, load_results_folder(tmp_path / "gpw", tier=Tier.FULL), TOLERANCES,
                 {("table4", "pair-p-cars196"): ["pair-p-cars196"]})  # fmt: skip
    shown = paper_shaped(paper.table("table4"), frame, KnownGaps(paper="gpw"), tmp_path, tmp_path)
    assert list(shown.columns) == [
        "method",
        "CUB-200-2011 R@1",
        "CUB-200-2011 R@2",
        "Cars196 R@1",
        "Cars196 R@2",
        "runs",
    ]
    assert _records(shown) == [
        {"method": "MS · *(quoted)*", "CUB-200-2011 R@1": "65.7", "CUB-200-2011 R@2": "77.0", "Cars196 R@1": "84.1",
         "Cars196 R@2": "90.4", "runs": ""},
        {"method": "Pair-P (p, q = 0, 1)", "CUB-200-2011 R@1": "69.5 → 68.0 (−1.5) ✓",
         "CUB-200-2011 R@2": "79.9 → 80.0 (+0.1) ✓", "Cars196 R@1": "86.3", "Cars196 R@2": "91.8",
         "runs": "1 seed, not run"},
    ]  # fmt: skip


def test_a_single_metric_over_many_data_sets_is_one_line_per_data_set_with_a_gap_link(tmp_path):
    anml = load_published("anml")
    write_linear_file(tmp_path, linear_payload((100.0,) * 30, grid_every=1))
    frame = join(anml, load_results_folder(tmp_path / "anml", tier=Tier.FULL), TOLERANCES)
    gaps = KnownGaps(paper="anml", gaps=[KnownGap(table="table2", rows=["lanml-plus-uci-iris"], why="because",
                                                   see="docs/notes.md#iris")])  # fmt: skip
    shown = paper_shaped(anml.table("table2"), frame, gaps, tmp_path / "tables", tmp_path)
    assert list(shown.columns)[:3] == ["data set", "NCA", "LMNN"] and list(shown.columns)[-1] == "runs"
    assert list(shown["data set"])[:2] == ["Australian", "Cars"] and len(shown) == 15
    iris = shown[shown["data set"] == "Iris"].iloc[0]
    assert iris["NCA"] == "95.76 ± 1.89"
    assert iris["LANML+"] == "99.89 ± 2.09 → 100.00 ± 0.00 (+0.11) ✓ [why?](../docs/notes.md#iris)"
    assert iris["LANML−"] == "99.79 ± 2.09" and iris["runs"] == "30 splits"


@pytest.mark.parametrize("key", ["damlrrm", "anml", "gpw", "drml", "cgml"])
def test_every_published_table_of_every_paper_renders_with_all_its_rows(key):
    paper = load_published(key)
    frame = join(paper, [], TOLERANCES)
    for table in paper.tables:
        shown = paper_shaped(table, frame, KnownGaps(paper=key), Path("tables"), Path("."))
        datasets = {row.dataset for row in table.rows}
        metrics = {metric for row in table.rows for metric in compared_metrics(row)}
        one_line_per_data_set = len(datasets) > 1 and len(metrics) == 1
        expected = len(datasets) if one_line_per_data_set else len({(r.method, r.setting) for r in table.rows})
        assert len(shown) == expected, (key, table.id)
        quoted = sum(row.quoted for row in table.rows)
        if quoted and not one_line_per_data_set:
            assert shown["method"].str.endswith("*(quoted)*").sum() == len({r.method for r in table.rows if r.quoted})
