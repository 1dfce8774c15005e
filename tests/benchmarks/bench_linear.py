"""anml Table 2's solver on one fold, today's code against the code it replaced, measured in the same run:

- LANML+ and LANML- on Glass and Vehicle: the grid search's batched fits (``fit_lanml_many``) with the compiled passes
  (``kernels``) against the numpy path (``compiled=False``);
- PNCA on German and Vehicle: ``fit_pnca`` (shared exponentials, a compiled masked pass) against the objective as it
  was (``tests/linear/reference_objectives.py``) under the numpy distances.

Data: the real sets where ``nox -s dml -- prepare uci`` has put them under the data root, else random data of the same
shape and class counts (the report says which); a spread of the paper's grid points. Both sides fit the same points to
the same bits (checked here too); the figure is CPU seconds per grid point, the sides alternating round by round so
that a busy moment of the machine falls on both, the median round kept, one thread. Writes
tables/benchmarks/linear-cpu.json. DML_BENCH_SCALE scales the points and rounds (0.1: a quick check).
"""

from __future__ import annotations

import os
import platform
import statistics
import time
from pathlib import Path

import numpy as np
import pytest
from sklearn.model_selection import StratifiedKFold, train_test_split
from threadpoolctl import threadpool_limits

from dml_core import provenance
from dml_core.atomic_io import atomic_write_json
from dml_core.errors import InputError
from dml_core.linear.batched_solver import minimise_many_over_psd
from dml_core.linear.grids import PAPER_GRIDS, thin_grid
from dml_core.linear.methods import (
    DEFAULT_SOLVER,
    LinearFit,
    as_fit,
    fit_lanml_many,
    fit_pnca,
    paper_initial_metric,
)
from dml_core.linear.neighbour_sets import different_class_sets, same_class_sets
from dml_core.linear.protocol import TEST_FRACTION, fit_preprocessing, grid_points
from dml_core.linear.uci import UCI_DATASETS, load_uci
from dml_core.output_paths import data_root
from tests.linear.reference_objectives import reference_pnca_objective

OUT = Path(os.environ.get("DML_BENCH_OUT") or Path(__file__).resolve().parents[2] / "tables" / "benchmarks")
SCALE = float(os.environ.get("DML_BENCH_SCALE", "1.0"))
ROUNDS = max(1, int(5 * SCALE))
POINTS = max(2, int(48 * SCALE))
WORKLOADS = [(data, method) for data in ("Glass", "Vehicle") for method in ("lanml_plus", "lanml_minus")]
WORKLOADS += [("German", "pnca"), ("Vehicle", "pnca")]
REPORT: dict[str, dict] = {}


def first_fold(name: str, root: Path | None = None) -> tuple[np.ndarray, np.ndarray, str]:
    """The training part of fold 0 of split 0 (seed 0), preprocessed as the protocol does, and what it came from."""
    try:
        X, y = load_uci(name, root if root is not None else data_root())
        what = f"{name}, split 0, fold 0"
    except InputError:  # not prepared here: random data of the set's shape and class counts
        shape = UCI_DATASETS[name].expected_shape
        rng = np.random.default_rng(0)
        y = np.arange(shape.n_samples) % shape.n_classes
        X = rng.normal(size=(shape.n_samples, shape.n_features)) + y[:, None] * rng.normal(size=shape.n_features)
        what = f"random data of {name}'s shape ({shape.n_samples} x {shape.n_features}, {shape.n_classes} classes)"
    train_X, _, train_y, _ = train_test_split(X, y, test_size=TEST_FRACTION, stratify=y, random_state=0)
    train_X = fit_preprocessing(train_X)(train_X)
    fold, _ = next(StratifiedKFold(n_splits=5, shuffle=True, random_state=0).split(train_X, train_y))
    return train_X[fold], train_y[fold], what


def spread_points(method: str, count: int) -> list[dict[str, float]]:
    """``count`` points spread evenly over the paper's grid (in its order)."""
    points = grid_points(PAPER_GRIDS[method])
    return [points[i] for i in np.linspace(0, len(points) - 1, count).round().astype(int)]


def _reference_pnca(X: np.ndarray, y: np.ndarray, points: list[dict]) -> list[LinearFit]:
    similar, dissimilar = same_class_sets(y), different_class_sets(y)

    def one(alpha: float) -> LinearFit:
        def objective(distances, problems):
            value, gradient = reference_pnca_objective(distances[0], similar, dissimilar, alpha)
            return np.array([value]), gradient[None]

        start = paper_initial_metric(*X.shape)[None]
        return as_fit(minimise_many_over_psd(objective, X, start, DEFAULT_SOLVER, 1, compiled=False)[0])

    return [one(point["alpha"]) for point in points]


def fit_points(method: str, X: np.ndarray, y: np.ndarray, points: list[dict], side: str) -> list[LinearFit]:
    """The fits of the grid points as the grid search makes them, by today's code ("compiled") or the code it replaced
    ("numpy")."""
    if method == "pnca":
        return [fit_pnca(X, y, **point) for point in points] if side == "compiled" else _reference_pnca(X, y, points)
    return fit_lanml_many(method, X, y, points, compiled=side == "compiled")


def compare(X: np.ndarray, y: np.ndarray, method: str, points: list[dict], rounds: int) -> dict:
    """CPU seconds per grid point of each side (median round), their ratio, and the fits' evaluations."""
    seconds: dict[str, list[float]] = {"numpy": [], "compiled": []}
    fits = {}
    with threadpool_limits(1):
        for _ in range(rounds):
            for side in seconds:
                started = time.process_time()  # this process's CPU seconds: what a busy machine changes least
                fits[side] = fit_points(method, X, y, points, side)
                seconds[side].append((time.process_time() - started) / len(points))
    for plain, fused in zip(fits["numpy"], fits["compiled"], strict=True):
        np.testing.assert_array_equal(plain.transform, fused.transform)
        assert plain.diagnostics == fused.diagnostics
    medians = {side: statistics.median(values) for side, values in seconds.items()}
    return {
        "seconds_per_point": medians,
        "speed_up": medians["numpy"] / medians["compiled"],
        "mean_evaluations": float(np.mean([fit.diagnostics["evaluations"] for fit in fits["compiled"]])),
    }


@pytest.mark.parametrize(("dataset", "method"), WORKLOADS)
def test_grid_search_solver(benchmark, dataset, method):
    X, y, what = first_fold(dataset)
    points = spread_points(method, POINTS if method != "pnca" else max(2, POINTS // 8))
    fit_points(method, X, y, points[:1], "compiled")  # compile the kernels outside the timing
    figures = benchmark.pedantic(lambda: compare(X, y, method, points, ROUNDS), rounds=1, iterations=1)
    REPORT[f"{dataset} {method}"] = {
        "data": what, "n_samples": len(X), "points": len(points), **figures,
        "hours_for_30_splits": thirty_splits_hours(method, figures["seconds_per_point"]["compiled"]),
    }  # fmt: skip


def thirty_splits_hours(method: str, seconds_per_point: float) -> dict[str, float]:
    """One core's hours for the protocol's 30 splits x 5 folds at each grid this suite runs or names, from one fold's
    cost per point (the refit of each split, one fit on 5/4 of a fold's samples, is left out: under 1%)."""
    grids = {"paper grid": 1, "grid every 3": 3} if method != "pnca" else {"paper grid": 1}
    return {
        name: len(grid_points(thin_grid(PAPER_GRIDS[method], every))) * 5 * 30 * seconds_per_point / 3600
        for name, every in grids.items()
    }


def test_zz_write_report(benchmark):
    benchmark.pedantic(lambda: None, rounds=1, iterations=1)
    report = {
        "benchmark": "Table 2 solver, one fold: today's code against the code it replaced (same fits, bit for bit)",
        "machine": f"{platform.processor() or platform.machine()}, one thread",
        "environment": {**provenance.environment(), "git": provenance.git_state()},
        "rounds": ROUNDS,
        "figures": {
            "seconds_per_point": "median round's CPU seconds (this process, one thread) per grid point",
            "hours_for_30_splits": "one core's hours for 30 splits x 5 folds over the whole grid, from today's code's "
            "seconds per point (the points spread evenly over the grid's order)",
            "speed_up": "the replaced code's seconds (numpy) over today's (compiled)",
        },
        "workloads": REPORT,
    }
    atomic_write_json(OUT / "linear-cpu.json", report)
