"""One figure per table: a sweep table over its swept value, any other as grouped bars; nothing when nothing is
reproduced; training curves only for runs with more than one evaluation."""

import pytest

from dml_core.published import load_published
from dml_core.results import load_results
from dml_core.tables.gate.join import join, load_results_folder
from dml_core.tables.gate.tolerances import Tolerances
from dml_core.tables.pages import figures
from dml_core.tier import Tier
from tests.tables.synthetic import results_payload, write_results_file

PNG_MAGIC = b"\x89PNG\r\n\x1a\n"


@pytest.fixture
def damlrrm_runs(tmp_path):
    rows = [("table4", "ours-alpha-26-cub200", 52.0), ("table4", "ours-alpha-28-cub200", 54.0),
            ("table1", "ours-cub200", 55.0)]  # fmt: skip
    for table, row, r1 in rows:
        curve = [{"R@1": r1 - 10, "R@2": 60.0}, {"R@1": r1, "R@2": 66.0}]
        write_results_file(tmp_path, results_payload(row, targets=[{"table": table, "row": row}], curve=curve))
    paper = load_published("damlrrm")
    return paper, join(paper, load_results_folder(tmp_path / "damlrrm", tier=Tier.FULL), Tolerances(default=1.5))


def test_a_sweep_table_and_a_main_table_each_get_one_figure(tmp_path, damlrrm_runs, monkeypatch):
    paper, frame = damlrrm_runs
    drawn = []
    monkeypatch.setattr(figures, "_sweep_figure", _spy(figures._sweep_figure, drawn, "sweep"))
    monkeypatch.setattr(figures, "_bars_figure", _spy(figures._bars_figure, drawn, "bars"))
    for table_id in ("table1", "table4", "table5"):
        lines = frame[frame["table"] == table_id]
        path = figures.table_figure(paper.table(table_id), lines, tmp_path / f"{table_id}.png", tier=Tier.FULL)
        assert (path is None) == (table_id == "table5")  # table5: nothing reproduced
    assert drawn == ["bars", "sweep"]
    assert (tmp_path / "table4.png").read_bytes().startswith(PNG_MAGIC)


def _spy(function, calls, name):
    def wrapper(*args, **kwargs):
        calls.append(name)
        return function(*args, **kwargs)

    return wrapper


def test_curves_are_drawn_for_runs_with_two_evaluations_only(tmp_path):
    two = load_results(write_results_file(tmp_path, results_payload(curve=[{"R@1": 10.0}, {"R@1": 20.0}])))
    one = load_results(write_results_file(tmp_path, results_payload("lifted-cub200", curve=[{"R@1": 10.0}])))
    assert figures.curves_figure("table1", {("lifted-cub200", ""): [one]}, tmp_path / "a.png", tier=Tier.SMOKE) is None
    path = figures.curves_figure("table1", {("ours-cub200", ""): [two], ("lifted-cub200", ""): [one]},
                                 tmp_path / "b.png", tier=Tier.FULL)  # fmt: skip
    assert path is not None and path.read_bytes().startswith(PNG_MAGIC)
