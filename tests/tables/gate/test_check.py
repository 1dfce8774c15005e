"""The nightly gate, read from the long-form CSV: below published or below the previous nightly (minus the
gate: the tolerance, or the measured spread where larger) fails, saying which; a waived line is listed apart and
does not fail against the published number, but still against the previous nightly."""

import math

import pandas as pd

from dml_core.tables.gate.check import check_long_forms, check_paper, line_key, summarize, waived_lines
from dml_core.tables.gate.join import WAIVED, status_of
from dml_core.tables.gate.long_form import COLUMNS, write_long_form
from dml_core.tier import Tier


def _frame(*lines, spread=math.nan, basis="not measured"):
    """Lines of (metric, published, reproduced); tolerance 1.5, gate the larger of it and ``spread``."""
    rows = []
    gate, gate_basis = (spread, basis) if spread > 1.5 else (1.5, "tolerance")
    for metric, published, reproduced in lines:
        rows.append(
            {"table": "table1", "row": "ours-cub200", "method": "OURS", "dataset": "cub200", "quoted": False,
             "recipe": "r", "variant": "", "seeds": "0", "unit": "seed", "samples": 1, "metric": metric,
             "published": published, "published_std": math.nan, "reproduced": reproduced, "std": math.nan,
             "spread": spread, "spread_basis": basis, "delta": reproduced - published, "tolerance": 1.5,
             "gate": gate, "gate_basis": gate_basis, "status": status_of(published, reproduced, gate), "note": ""}
        )  # fmt: skip
    return pd.DataFrame(rows, columns=list(COLUMNS))


def test_below_published_minus_tolerance_fails_and_says_why():
    frame = _frame(("R@1", 55.1, 53.5), ("R@2", 67.0, 65.5), ("NMI", 60.0, 70.0))
    failures = check_paper("damlrrm", frame, None, tier=Tier.FULL)
    assert [f.metric for f in failures] == ["R@1"]  # R@2 exactly at the edge passes; above never fails
    assert str(failures[0]) == (
        "damlrrm table1 ours-cub200 [r] R@1: 53.50 is below published 55.1 minus tolerance 1.5 (delta -1.60)"
    )


def test_a_measured_spread_larger_than_the_tolerance_is_the_gate_and_is_named():
    frame = _frame(("R@1", 55.1, 53.5), ("R@2", 67.0, 64.0), spread=2.5, basis="std over 3 seeds")
    failures = check_paper("damlrrm", frame, None, tier=Tier.FULL)
    assert [f.metric for f in failures] == ["R@2"]  # -1.6 is within 2.5; -3.0 is not
    assert failures[0].reason == (
        "64.00 is below published 67 minus the measured spread 2.50 (std over 3 seeds, above the tolerance 1.5) "
        "(delta -3.00)"
    )


def test_a_regression_against_the_previous_nightly_fails_even_above_published():
    frame = _frame(("R@1", 50.0, 60.0), ("R@2", 60.0, 70.0), ("NMI", 50.0, math.nan))
    previous = {line_key("table1", "ours-cub200", "r", m): v for m, v in (("R@1", 61.6), ("R@2", 71.0), ("NMI", 55))}
    reasons = {f.metric: f.reason for f in check_paper("damlrrm", frame, previous, tier=Tier.FULL)}
    assert reasons == {
        "R@1": "60.00 is below the previous nightly's 61.60 minus tolerance 1.5 (change -1.60)",
        "NMI": "not measured now; the previous nightly measured 55.00",
    }


def test_smoke_numbers_are_compared_with_the_previous_smoke_nightly_only():
    frame = _frame(("R@1", 55.1, 3.0))
    assert check_paper("damlrrm", frame, None, tier=Tier.SMOKE) == []
    previous = {line_key("table1", "ours-cub200", "r", "R@1"): 5.0}
    assert [f.metric for f in check_paper("damlrrm", frame, previous, tier=Tier.SMOKE)] == ["R@1"]


def test_the_gate_reads_the_long_form_csv(tmp_path):
    path = write_long_form(tmp_path / "damlrrm.csv", _frame(("R@1", 55.1, 53.5), ("R@2", 67.0, 67.0)))
    gate = check_long_forms({"damlrrm": path}, {}, tier=Tier.FULL)
    assert [f.metric for f in gate.failures] == ["R@1"] and gate.waived == []
    assert gate.values == {"damlrrm": {"table1/ours-cub200/r/R@1": 53.5, "table1/ours-cub200/r/R@2": 67.0}}


def test_a_run_under_other_readings_has_its_own_key():
    frame = _frame(("R@1", 55.1, 54.0)).assign(variant="damlrrm.lr=1e-3")
    assert summarize(frame) == {"table1/ours-cub200/r~damlrrm.lr=1e-3/R@1": 54.0}


def test_a_waived_line_is_listed_apart_and_still_compared_with_the_previous_nightly(tmp_path):
    frame = _frame(("R@1", 55.1, 53.5), ("R@2", 67.0, 65.0))
    frame.loc[frame["metric"] == "R@1", "status"] = WAIVED  # as apply_waivers marks it
    path = write_long_form(tmp_path / "damlrrm.csv", frame)
    gate = check_long_forms({"damlrrm": path}, {}, tier=Tier.FULL)
    assert [f.metric for f in gate.failures] == ["R@2"]
    assert [str(w) for w in gate.waived] == [
        "damlrrm table1 ours-cub200 [r] R@1: 53.50 is below published 55.1 minus tolerance 1.5 (delta -1.60): "
        "waived (papers/damlrrm/known_gaps.yaml)"
    ]
    previous = {line_key("table1", "ours-cub200", "r", "R@1"): 56.0}
    assert [f.reason for f in check_paper("damlrrm", frame, previous, tier=Tier.FULL) if f.metric == "R@1"] == [
        "53.50 is below the previous nightly's 56.00 minus tolerance 1.5 (change -2.50)"
    ]
    assert waived_lines("damlrrm", frame.assign(status="below")) == []
