"""The mini part's verdict: a run on the GPU that gains under the bar (or gives no number) is named."""

import math

from dml_core.gpu_check.mini import MIN_GAIN, weak_runs
from dml_core.tables.pages.mini import MiniRow


def _row(name, untrained, trained):
    return MiniRow(name, (0,), (untrained,), (trained,), (), (), "googlenet", 0.25, 64, 600, (30.0,))


def test_runs_under_the_bar_or_without_a_number_are_named():
    rows = [_row("cgml-triplet-cars196", 2.8, 35.0), _row("triplet-cars196", 2.9, 2.9 + MIN_GAIN - 0.1)]
    assert weak_runs(rows) == ["triplet-cars196 +4.9"]
    assert weak_runs([_row("x", 2.0, math.nan)]) == ["x +nan"]
    assert weak_runs(rows[:1]) == []
