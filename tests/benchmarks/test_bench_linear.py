"""The LANML solver benchmark's measurement still runs (the test gate does not collect bench_*.py), on a few grid
points of random data shaped as Glass: both paths, the same fits, a positive speed-up figure."""

from pathlib import Path

from tests.benchmarks.bench_linear import compare, first_fold, spread_points


def test_the_linear_benchmark_compares_the_two_paths_on_the_same_fits(tmp_path: Path):
    X, y, what = first_fold("Glass", root=tmp_path)  # nothing prepared there: random data of Glass's shape
    assert what.startswith("random data of Glass's shape (214 x 9, 6 classes)") and X.shape == (119, 9)
    points = spread_points("lanml_minus", 2)
    assert points[0] == {"lam": 0.1, "gamma1": -(2.0**-5), "gamma2": 2.0**-5}
    figures = compare(X, y, "lanml_minus", points, rounds=1)  # asserts the two paths' fits are equal
    assert figures["speed_up"] > 0 and figures["mean_evaluations"] >= 1


def test_the_pnca_comparison_holds_the_new_objective_to_the_old_ones_fits(tmp_path: Path):
    X, y, _ = first_fold("Glass", root=tmp_path)
    points = spread_points("pnca", 2)
    assert [point["alpha"] for point in points] == [2.0**-8, 2.0**10]
    figures = compare(X, y, "pnca", points, rounds=1)  # asserts the fits are equal, bit for bit
    assert figures["speed_up"] > 0
