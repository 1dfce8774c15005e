"""The Table 2 protocol of anml (section 7.1): accuracy of kNN under a learned linear metric.

Per seeded split: a stratified 70/30 split, z-score and PCA fitted on the training part, 5-fold cross-validation over
the method's grid, a refit, and kNN accuracy on the test part for every K in 1..40; the mean and sample std over
splits, in percent. Where the paper is silent (which part the scaler sees, which K "best" means: ``k_rule``), the
choices and why are in reproduce/anml/table2_linear.md.
"""

from __future__ import annotations

import inspect
import itertools
import platform
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import asdict, dataclass, field
from pathlib import Path

import numpy as np
import sklearn
from joblib import Parallel, delayed
from sklearn.decomposition import PCA
from sklearn.model_selection import StratifiedKFold, train_test_split
from sklearn.preprocessing import StandardScaler

from dml_core.atomic_io import atomic_write_json
from dml_core.errors import InputError
from dml_core.linear.grids import N_FOLDS, PAPER_GRIDS, Grid
from dml_core.linear.knn_accuracy import TABLE2_MAX_K, knn_accuracy_by_k, knn_accuracy_by_k_many
from dml_core.linear.methods import DISPLAY_NAMES, MANY_FITS, METHODS, transform_with
from dml_core.linear.solver_config import SolverConfig
from dml_core.linear.uci import get_uci_dataset, load_uci, uci_source

K_RULES = ("test", "cv")
PAPER_SPLITS = 30
PCA_DIMENSIONS = 150
TEST_FRACTION = 0.3


@dataclass
class SplitResult:
    split: int
    seed: int
    hyper_parameters: dict
    cv_accuracy: float  # best fold-averaged accuracy of the chosen grid point, in [0, 1]
    cv_k: int
    best_test_k: int
    test_accuracy_by_k: list[float]  # index K-1, in [0, 1]
    accuracy: float  # percent, under the result's k_rule
    seconds: float
    fit_diagnostics: dict = field(default_factory=dict)


@dataclass
class Table2Result:
    dataset: str
    method: str
    k_rule: str
    mean_accuracy: float  # percent
    std_accuracy: float  # percent, ddof=1 (0 for a single split)
    splits: list[SplitResult]
    settings: dict
    seconds: float

    def to_dict(self) -> dict:
        return asdict(self)

    def save_json(self, path: str | Path) -> Path:
        return atomic_write_json(path, self.to_dict())


def split_accuracy(test_accuracy_by_k: Sequence[float], cv_k: int, k_rule: str) -> float:
    """Percent accuracy of one split under a K rule: the best K on the test part, or the CV-chosen K.

    >>> split_accuracy([0.5, 0.75, 0.625], cv_k=1, k_rule="test"), split_accuracy([0.5, 0.75, 0.625], 1, "cv")
    (75.0, 50.0)
    """
    if k_rule == "test":
        return 100.0 * float(max(test_accuracy_by_k))
    return 100.0 * float(test_accuracy_by_k[min(cv_k, len(test_accuracy_by_k)) - 1])


def mean_and_std(accuracies: Sequence[float]) -> tuple[float, float]:
    """Mean and sample standard deviation (ddof=1; 0 for a single split).

    >>> mean_and_std([90.0, 100.0])
    (95.0, 7.0710678118654755)
    """
    values = np.asarray(accuracies, dtype=np.float64)
    return float(values.mean()), float(values.std(ddof=1)) if len(values) > 1 else 0.0


def rescore(result: Table2Result | Mapping, k_rule: str) -> tuple[float, float]:
    """Mean and std of a finished run (or its saved JSON dict) under another K rule: no refit needed."""
    splits = result["splits"] if isinstance(result, Mapping) else [asdict(s) for s in result.splits]
    return mean_and_std([split_accuracy(s["test_accuracy_by_k"], s["cv_k"], k_rule) for s in splits])


def grid_points(grid: Grid) -> list[dict[str, float]]:
    """The Cartesian product of a grid, in the order of its keys and values.

    >>> grid_points({"a": (1, 2), "b": (3,)})
    [{'a': 1, 'b': 3}, {'a': 2, 'b': 3}]
    >>> grid_points({})
    [{}]
    """
    names = list(grid)
    return [dict(zip(names, values, strict=True)) for values in itertools.product(*(grid[n] for n in names))]


def fit_preprocessing(train_X: np.ndarray, max_dimensions: int = PCA_DIMENSIONS):
    """Standardise, then PCA to ``max_dimensions`` when there are more features; fitted on ``train_X``."""
    steps = [StandardScaler().fit(train_X)]
    if train_X.shape[1] > max_dimensions:
        steps.append(PCA(n_components=max_dimensions, svd_solver="full").fit(steps[0].transform(train_X)))

    def apply(X: np.ndarray) -> np.ndarray:
        for step in steps:
            X = step.transform(X)
        return X

    return apply


def _fit_and_score(method, hyper_parameters, train_X, train_y, test_X, test_y, seed, solver, max_k):
    fit_function = METHODS[method]
    # The iterative methods take the solver settings; the library baselines have none.
    extra = {"solver": solver} if "solver" in inspect.signature(fit_function).parameters else {}
    fit = fit_function(train_X, train_y, seed=seed, **hyper_parameters, **extra)
    accuracy = knn_accuracy_by_k(
        transform_with(fit, train_X), train_y, transform_with(fit, test_X), test_y, max_k=max_k
    )
    return accuracy, fit


def _fold_accuracy(method, point, X, y, train, valid, seed, solver, max_k) -> np.ndarray:
    return _fit_and_score(method, point, X[train], y[train], X[valid], y[valid], seed, solver, max_k)[0]


def _fold_accuracies(method, points, X, y, train, valid, solver, max_k) -> list[np.ndarray]:
    """``_fold_accuracy`` for many grid points at once: one batched solve (``MANY_FITS``), the same fits."""
    fits = MANY_FITS[method](method, X[train], y[train], points, solver=solver)
    transforms = np.stack([fit.transform for fit in fits])
    return list(knn_accuracy_by_k_many(X[train], y[train], X[valid], y[valid], transforms, max_k=max_k))


def _chunks(items: Sequence, count: int) -> list[Sequence]:
    """``items`` cut into ``count`` contiguous, near-equal parts (none empty).

    >>> _chunks([1, 2, 3, 4, 5], 2)
    [[1, 2], [3, 4, 5]]
    """
    bounds = np.linspace(0, len(items), min(count, len(items)) + 1).round().astype(int)
    return [items[start:stop] for start, stop in itertools.pairwise(bounds)]


def cross_validate(
    method: str,
    grid: Grid,
    X: np.ndarray,
    y: np.ndarray,
    seed: int,
    solver: SolverConfig,
    max_k: int,
    n_folds: int,
    n_jobs: int = 1,
    batched: bool = True,
) -> tuple[dict, float, int]:
    """The grid point with the best fold-averaged kNN accuracy (over K), that accuracy and its K.

    The first best point in grid order wins, with the smallest of its tied Ks.

    Methods with a batched solver (``MANY_FITS``: LANML+ and LANML-) fit all grid points of a fold at once
    unless ``batched=False`` (one point at a time, the reference path); the fits are the same.
    ``n_jobs`` > 1 runs parts of the work in parallel processes (grid points x folds, or with the batched
    solver, slices of the grid x folds); the result is the same.
    """
    folds = list(StratifiedKFold(n_splits=n_folds, shuffle=True, random_state=seed).split(X, y))
    points = grid_points(grid)
    if batched and method in MANY_FITS:
        chunks = _chunks(points, n_jobs)
        by_fold_and_chunk = Parallel(n_jobs=n_jobs)(
            delayed(_fold_accuracies)(method, chunk, X, y, train, valid, solver, max_k)
            for train, valid in folds
            for chunk in chunks
        )
        by_fold = [
            list(itertools.chain.from_iterable(by_fold_and_chunk[f * len(chunks) : (f + 1) * len(chunks)]))
            for f in range(n_folds)
        ]
        accuracies = [by_fold[f][p] for p in range(len(points)) for f in range(n_folds)]
    else:
        accuracies = Parallel(n_jobs=n_jobs)(
            delayed(_fold_accuracy)(method, point, X, y, train, valid, seed, solver, max_k)
            for point in points
            for train, valid in folds
        )
    best = ({}, -1.0, 1)
    for index, point in enumerate(points):
        per_fold = accuracies[index * n_folds : (index + 1) * n_folds]
        common = min(len(a) for a in per_fold)
        mean_by_k = np.mean([a[:common] for a in per_fold], axis=0)
        k_index = int(np.argmax(mean_by_k))
        if mean_by_k[k_index] > best[1]:
            best = (point, float(mean_by_k[k_index]), k_index + 1)
    return best


def run_protocol_on_arrays(
    X: np.ndarray,
    y: np.ndarray,
    method: str,
    *,
    dataset: str = "arrays",
    n_splits: int = PAPER_SPLITS,
    seed: int = 0,
    grid: Grid | None = None,
    k_rule: str = "test",
    n_folds: int = N_FOLDS,
    max_k: int = TABLE2_MAX_K,
    test_fraction: float = TEST_FRACTION,
    solver: SolverConfig | None = None,
    n_jobs: int = 1,
    batched: bool = True,
    done: Sequence[SplitResult] = (),
    on_split: Callable[[list[SplitResult]], None] | None = None,
) -> Table2Result:
    """The Table 2 protocol on features ``X`` (n, d) and labels ``y`` (n,); ``grid=None``: the paper grid.

    ``batched=False`` runs the grid search one point at a time (the reference path; same results, slower).
    Resuming: ``done`` are the first splits of an interrupted run under the same settings (each split depends
    only on its seed, so they are taken as they are); ``on_split`` receives the splits so far after each new one.
    """
    grid = _checked_grid(method, k_rule, n_splits, grid)
    solver = solver or SolverConfig()
    splits = _checked_done(done, seed, n_splits)
    for split in range(len(splits), n_splits):
        splits.append(
            _run_split(
                X, y, method, grid, split, seed + split, k_rule, n_folds, max_k, test_fraction, solver, n_jobs, batched
            )
        )
        if on_split is not None:
            on_split(list(splits))
    mean_accuracy, std_accuracy = mean_and_std([s.accuracy for s in splits])
    return Table2Result(
        dataset=dataset,
        method=DISPLAY_NAMES[method],
        k_rule=k_rule,
        mean_accuracy=mean_accuracy,
        std_accuracy=std_accuracy,
        splits=splits,
        settings={
            "method_key": method,
            "n_splits": n_splits,
            "n_jobs": n_jobs,
            "seed": seed,
            "grid": {name: list(values) for name, values in grid.items()},
            "grid_is_paper_grid": {k: tuple(v) for k, v in grid.items()} == dict(PAPER_GRIDS[method]),
            "n_folds": n_folds,
            "max_k": max_k,
            "test_fraction": test_fraction,
            "n_samples": len(X),
            "n_features": X.shape[1],
            "pca_dimensions": PCA_DIMENSIONS if X.shape[1] > PCA_DIMENSIONS else None,
            "solver": asdict(solver),
            "versions": {
                "python": platform.python_version(),
                "numpy": np.__version__,
                "sklearn": sklearn.__version__,
            },
        },
        seconds=sum(split.seconds for split in splits),  # the splits' own times: a resumed run adds up alike
    )


def _checked_grid(method: str, k_rule: str, n_splits: int, grid: Grid | None) -> Grid:
    """The grid to search (``None``: the paper's), once the method, the k rule and the split count are known."""
    METHODS.lookup(method)
    if k_rule not in K_RULES:
        raise InputError(f"k_rule: expected one of {', '.join(K_RULES)}, found {k_rule!r}")
    if n_splits < 1:
        raise InputError(f"n_splits: expected at least 1, found {n_splits}")
    grid = PAPER_GRIDS[method] if grid is None else grid
    unknown = set(grid) - set(PAPER_GRIDS[method])
    if unknown:
        raise InputError(f"grid: {method} has no hyper-parameter {sorted(unknown)}; it has {list(PAPER_GRIDS[method])}")
    return grid


def _checked_done(done: Sequence[SplitResult], seed: int, n_splits: int) -> list[SplitResult]:
    """The finished splits of an interrupted run, each where its number and seed say it belongs."""
    splits = list(done)
    for number, split in enumerate(splits):
        if (split.split, split.seed) != (number, seed + number):
            raise InputError(
                f"done: expected split {number} with seed {seed + number} at position {number}, "
                f"found split {split.split} with seed {split.seed}"
            )
    if len(splits) > n_splits:
        raise InputError(f"done: expected at most {n_splits} splits, found {len(splits)}")
    return splits


def _run_split(
    X: np.ndarray,
    y: np.ndarray,
    method: str,
    grid: Grid,
    split: int,
    split_seed: int,
    k_rule: str,
    n_folds: int,
    max_k: int,
    test_fraction: float,
    solver: SolverConfig,
    n_jobs: int,
    batched: bool,
) -> SplitResult:
    """One split: stratified train/test, preprocessing fitted on train, the grid search by cross-validation, the
    chosen point refitted on the whole train part and scored on test for every k."""
    split_started = time.perf_counter()
    train_X, test_X, train_y, test_y = train_test_split(
        X, y, test_size=test_fraction, stratify=y, random_state=split_seed
    )
    preprocess = fit_preprocessing(train_X)
    train_X, test_X = preprocess(train_X), preprocess(test_X)
    point, cv_accuracy, cv_k = cross_validate(
        method, grid, train_X, train_y, split_seed, solver, max_k, n_folds, n_jobs, batched
    )
    accuracy_by_k, fit = _fit_and_score(method, point, train_X, train_y, test_X, test_y, split_seed, solver, max_k)
    return SplitResult(
        split=split,
        seed=split_seed,
        hyper_parameters=point,
        cv_accuracy=cv_accuracy,
        cv_k=cv_k,
        best_test_k=int(np.argmax(accuracy_by_k)) + 1,
        test_accuracy_by_k=[float(a) for a in accuracy_by_k],
        accuracy=split_accuracy(accuracy_by_k, cv_k, k_rule),
        seconds=time.perf_counter() - split_started,
        fit_diagnostics=fit.diagnostics,
    )


def run_table2_protocol(
    dataset_name: str, method: str, *, root: str | Path | None = None, **protocol_options
) -> Table2Result:
    """The Table 2 protocol on a data set of ``dml_core.linear.uci`` (Iris and Wine need no ``root``).

    ``protocol_options``: those of ``run_protocol_on_arrays`` (n_splits, seed, grid, k_rule, ...).
    """
    dataset = get_uci_dataset(dataset_name)
    X, y = load_uci(dataset.name, root)
    result = run_protocol_on_arrays(X, y, method, dataset=dataset.name, **protocol_options)
    result.settings["data_source"] = uci_source(dataset.name, root)
    return result
