"""The nightly history: every nightly's lines recorded (a nightly run again under its name replaces its own), the
baseline is the latest passing nightly of the same tier (a failed one never is), a damaged file is named, and the
trend figures are drawn once a paper has two nightlies."""

import math

import pandas as pd
import pytest

from dml_core.errors import InputError
from dml_core.tables.gate.long_form import COLUMNS
from dml_core.tables.nightly.history import NightlyRecord, history_path, previous_passing, read_history, record_nightly
from dml_core.tables.nightly.trends import draw_trends, trend_path


def _frame(r1: float, nmi: float = math.nan) -> pd.DataFrame:
    lines = [("R@1", 55.1, r1), ("NMI", 60.0, nmi)]
    rows = [
        {column: "" for column in COLUMNS} | {"table": "table1", "row": "ours-cub200", "recipe": "ours-cub200",
         "metric": metric, "published": published, "reproduced": value}
        for metric, published, value in lines
    ]  # fmt: skip
    return pd.DataFrame(rows, columns=list(COLUMNS))


def _record(name, started, passed, r1, tier="smoke", nmi=math.nan):
    return NightlyRecord(name, tier, started, "c0ffee" + name, False, passed, {"damlrrm": _frame(r1, nmi)})


def test_the_baseline_is_the_latest_passing_nightly_of_the_tier(tmp_path):
    path = history_path(tmp_path)
    assert previous_passing(read_history(path), "smoke", "n1") is None  # no history yet
    record_nightly(path, _record("n1", "2026-01-01T00:00:00+00:00", True, 50.0, nmi=40.0))
    record_nightly(path, _record("n2", "2026-01-02T00:00:00+00:00", False, 20.0))  # failed: never the baseline
    record_nightly(path, _record("f1", "2026-01-03T00:00:00+00:00", True, 90.0, tier="full"))  # another tier
    history = read_history(path)
    baseline = previous_passing(history, "smoke", "n3")
    assert (baseline.name, baseline.commit) == ("n1", "c0ffeen1")
    assert baseline.values == {"damlrrm": {"table1/ours-cub200/ours-cub200/R@1": 50.0,
                                           "table1/ours-cub200/ours-cub200/NMI": 40.0}}  # fmt: skip
    assert previous_passing(history, "smoke", "n1") is None  # a nightly is not its own baseline
    # Run again under its name (resumed), n2 passes: its lines replace the old ones, and it is the baseline now.
    record_nightly(path, _record("n2", "2026-01-02T00:00:00+00:00", True, 51.0))
    history = read_history(path)
    assert len(history[history["nightly"] == "n2"]) == 2
    assert previous_passing(history, "smoke", "n3").values["damlrrm"] == {"table1/ours-cub200/ours-cub200/R@1": 51.0}


def test_a_damaged_history_is_named(tmp_path):
    path = history_path(tmp_path)
    path.parent.mkdir(parents=True)
    path.write_text("nightly,tier\nn1,smoke\n")
    with pytest.raises(InputError, match=r"history.csv: field started: expected the columns nightly, tier, started"):
        read_history(path)
    record_nightly(path.with_name("ok.csv"), _record("n1", "2026-01-01T00:00:00+00:00", True, 50.0))
    path.write_text(path.with_name("ok.csv").read_text().replace(",True,", ",maybe,"))
    with pytest.raises(InputError, match=r"history.csv: field passed: expected True or False, found 'maybe'"):
        read_history(path)


def test_a_trend_figure_per_paper_once_it_has_two_nightlies(tmp_path):
    path = history_path(tmp_path)
    record_nightly(path, _record("n1", "2026-01-01T00:00:00+00:00", True, 50.0))
    assert draw_trends(read_history(path), "smoke", tmp_path) == []
    record_nightly(path, _record("n2", "2026-01-02T00:00:00+00:00", False, 40.0))
    assert draw_trends(read_history(path), "smoke", tmp_path) == [trend_path(tmp_path, "smoke", "damlrrm")]
    assert trend_path(tmp_path, "smoke", "damlrrm").read_bytes().startswith(b"\x89PNG")
    assert draw_trends(read_history(path), "full", tmp_path) == []
