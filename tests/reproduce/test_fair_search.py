"""The fair study's validation search runs (slow): ``dml reproduce fair --smoke`` trains one method at its paper's
point and, under ``--reading fair.search-point=loss-x0.5`` and ``=lr-x2``, at two of its search points; each results
file records the point's setting, and the smoke page picks the point with the best validation R@1 those files
record."""

import pytest

from dml_core.cli import main
from dml_core.results import load_results

RUN = "anml-cub200"
# point -> (its results file's variant suffix, anml's gamma2 there: reproduce/fair/methods.yaml, and the learning rate
# as a multiple of the paper point's: reproduce/fair/searched.yaml)
POINTS = {"paper": ("", 30.0, 1.0), "loss-x0.5": ("~fair.search-point=loss-x0.5", 15.0, 1.0),
          "lr-x2": ("~fair.search-point=lr-x2", 30.0, 2.0)}  # fmt: skip


@pytest.mark.slow
def test_the_search_trains_each_point_and_the_page_picks_one_on_validation(tmp_path, glyph_data_root):
    where = ["--runs", str(tmp_path / "runs"), "--results", str(tmp_path / "results"),
             "--tables", str(tmp_path / "tables"), "--data-root", str(glyph_data_root)]  # fmt: skip
    for point in POINTS:
        reading = [] if point == "paper" else ["--reading", f"fair.search-point={point}"]
        assert main(["reproduce", "fair", "--smoke", "--only", RUN, "--no-progress", *reading, *where]) == 0
    validation, rates = {}, {}
    for point, (suffix, gamma2, _) in POINTS.items():
        results = load_results(tmp_path / "results" / "smoke" / "fair" / f"{RUN}{suffix}-seed0.json")
        assert results.recipe.content["loss"]["params"]["gamma2"] == gamma2
        rates[point] = results.recipe.content["optimizer"]["lr"]
        assert results.recipe.content["readings"]["fair.search-point"] == point
        validation[point] = results.selection.validation_metrics["R@1"]
    assert {point: rate / rates["paper"] for point, rate in rates.items()} == pytest.approx(
        {point: factor for point, (_, _, factor) in POINTS.items()}
    )
    picked = max(validation, key=lambda point: (validation[point], -list(POINTS).index(point)))
    page = (tmp_path / "tables" / "smoke" / "fair.md").read_text()
    points = " · ".join(f"{point} {value:.1f} (1)" for point, value in validation.items())
    assert f"| anml | {points} | {picked} |" in page
    assert "### Validation search on CUB-200-2011 (reading `fair.search-point`, exploratory)" in page
