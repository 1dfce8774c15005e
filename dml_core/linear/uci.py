"""The 15 data sets of anml Table 1/2, named as Table 1 prints them.

Iris and Wine ship with scikit-learn and load offline. The others come from OpenML (``fetch_openml`` on a
connected machine, cached under ``<root>/openml``) or, where we know no stable public copy that matches,
from a CSV file the user supplies. ``prepare_uci(name, root)`` writes the canonical cache file
``<root>/uci/<name>.npz`` (arrays ``X`` float64 (n, d), ``y`` int64 (n,) codes 0..C-1 and ``class_names``),
after a shape and class-count check (no checksum: OpenML serves the data set, not a fixed archive).
``load_uci(name, root)`` reads it back with the same check.

Where the source does not deliver what Table 1 prints, ``source_shape`` records what it does deliver,
the check uses it, and ``note`` says why (the paper's shape stays in ``paper_shape``).
Categorical features are ordinal-encoded (category codes), which keeps the feature counts Table 1 prints.
"""

from __future__ import annotations

import socket
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import pandas as pd
from sklearn import datasets

from dml_core.atomic_io import atomic_write
from dml_core.errors import InputError
from dml_core.registry import Registry

OPENML_HOST = "api.openml.org"
CONNECT_TIMEOUT_S = 5.0


@dataclass(frozen=True)
class Shape:
    n_samples: int
    n_features: int
    n_classes: int


@dataclass(frozen=True)
class UciDataset:
    name: str
    paper_shape: Shape  # Table 1 of the paper
    source: str  # "sklearn", "openml" or "csv" (a file the user supplies)
    openml_id: int | None = None
    sklearn_loader: str | None = None
    source_shape: Shape | None = None  # what the source delivers, where it differs from the paper
    note: str = ""

    @property
    def expected_shape(self) -> Shape:
        return self.source_shape or self.paper_shape


_NO_PUBLIC_COPY = "no stable public copy with this shape is known to us: supply a CSV (features..., label)"

_UCI_SETS: dict[str, UciDataset] = {
    d.name: d
    for d in (
        UciDataset("Australian", Shape(690, 14, 2), "openml", openml_id=40981),
        UciDataset("Cars", Shape(392, 8, 2), "csv", note=_NO_PUBLIC_COPY),
        UciDataset(
            "Ecoli",
            Shape(336, 343, 8),
            "openml",
            openml_id=39,
            source_shape=Shape(336, 7, 8),
            note="Table 1 prints 343 features; UCI Ecoli has 7",
        ),
        UciDataset("German", Shape(1000, 20, 2), "openml", openml_id=31, note="OpenML credit-g"),
        UciDataset("Glass", Shape(214, 9, 6), "openml", openml_id=41),
        UciDataset("Iris", Shape(150, 4, 3), "sklearn", sklearn_loader="load_iris"),
        UciDataset(
            "Isolet",
            Shape(1560, 617, 2),
            "openml",
            openml_id=300,
            source_shape=Shape(7797, 617, 26),
            note="Table 1 prints 1,560 samples and 2 classes, which no ISOLET release we know has; "
            "OpenML serves the full set",
        ),
        UciDataset(
            "Monk1",
            Shape(432, 6, 2),
            "openml",
            openml_id=333,
            source_shape=Shape(556, 6, 2),
            note="OpenML monks-problems-1 joins the 124 training and 432 test rows; Table 1 counts 432",
        ),
        UciDataset("Solar", Shape(323, 12, 6), "csv", note=_NO_PUBLIC_COPY),
        UciDataset("Vehicle", Shape(846, 18, 4), "openml", openml_id=54),
        UciDataset("Wine", Shape(178, 13, 3), "sklearn", sklearn_loader="load_wine"),
        UciDataset("Pendigits", Shape(10992, 16, 10), "openml", openml_id=32),
        UciDataset("Coil20", Shape(1440, 1024, 20), "csv", note=_NO_PUBLIC_COPY),
        UciDataset("Letter", Shape(20000, 16, 26), "openml", openml_id=6),
        UciDataset("Usps", Shape(9298, 256, 10), "openml", openml_id=41082),
    )
}
UCI_DATASETS: Registry[UciDataset] = Registry("UCI data set", "dataset", _UCI_SETS)


def get_uci_dataset(name: str) -> UciDataset:
    """The registry entry for ``name`` (case-insensitive)."""
    return UCI_DATASETS.lookup(uci_key(name))


def uci_key(name: str) -> str:
    """The registered spelling of ``name`` (case-insensitive); ``name`` itself where none matches."""
    return next((key for key in UCI_DATASETS if key.lower() == str(name).lower()), name)


def cache_path(name: str, root: str | Path) -> Path:
    """Where ``prepare_uci`` writes a data set: ``<root>/uci/<name>.npz``."""
    return Path(root) / "uci" / f"{get_uci_dataset(name).name}.npz"


def encode_labels(labels) -> tuple[np.ndarray, np.ndarray]:
    """Class codes 0..C-1 (in sorted order of the labels' text) and the class names.

    >>> encode_labels(["b", "a", "b"])
    (array([1, 0, 1]), array(['a', 'b'], dtype='<U1'))
    """
    names, codes = np.unique(np.asarray(labels).astype(str), return_inverse=True)
    return codes.astype(np.int64), names


def check_shape(dataset: UciDataset, X: np.ndarray, y: np.ndarray, where: str) -> None:
    """Raise ``InputError`` unless (n_samples, n_features, n_classes) match the expected shape."""
    expected = dataset.expected_shape
    found = {
        "n_samples": len(X),
        "n_features": X.shape[1] if X.ndim == 2 else -1,
        "n_classes": len(np.unique(y)),
    }
    for field_name, value in found.items():
        if value != getattr(expected, field_name):
            raise InputError(
                f"{where}: {dataset.name} {field_name}: expected {getattr(expected, field_name)}, found {value}"
            )
    if not np.all(np.isfinite(X)):
        raise InputError(f"{where}: {dataset.name} features: expected finite numbers, found NaN or inf")


def _load_from_sklearn(dataset: UciDataset) -> tuple[np.ndarray, np.ndarray, np.ndarray]:

    bunch = getattr(datasets, dataset.sklearn_loader)()
    return bunch.data.astype(np.float64), bunch.target.astype(np.int64), np.asarray(bunch.target_names)


def _frame_to_arrays(frame) -> np.ndarray:
    """A pandas feature frame as float64, categorical columns replaced by their category codes."""
    columns = []
    for column in frame.columns:
        values = frame[column]
        if values.dtype.name == "category" or values.dtype == object:
            codes = values.astype("category").cat.codes.to_numpy().astype(np.float64)
            columns.append(np.where(codes < 0, np.nan, codes))
        else:
            columns.append(values.to_numpy(dtype=np.float64))
    return np.column_stack(columns)


def _require_connection(dataset: UciDataset, host: str = OPENML_HOST) -> None:
    """Fail at once, with what to do, when OpenML cannot be reached (rather than hang in a retry loop)."""
    try:
        socket.create_connection((host, 443), timeout=CONNECT_TIMEOUT_S).close()
    except OSError as error:
        raise InputError(
            f"{dataset.name}: cannot reach {host} to fetch OpenML data set {dataset.openml_id} ({error}); "
            f"run `nox -s dml -- prepare uci:{dataset.name} --root DIR` on a connected machine and copy <root>/uci/"
            f"{dataset.name}.npz here"
        ) from None


def _fetch_from_openml(dataset: UciDataset, root: Path) -> tuple[np.ndarray, np.ndarray, np.ndarray]:

    _require_connection(dataset)
    try:
        bunch = datasets.fetch_openml(
            data_id=dataset.openml_id,
            data_home=str(root / "openml"),
            as_frame=True,
            parser="auto",
            n_retries=1,
        )
    except OSError as error:  # URLError, HTTPError and socket errors are all OSErrors
        raise InputError(
            f"{dataset.name}: fetching OpenML data set {dataset.openml_id} failed ({error}); check the "
            f"connection, or supply the data as a CSV: `nox -s dml -- prepare uci:{dataset.name} --root DIR "
            "--archive FILE.csv`"
        ) from None
    codes, names = encode_labels(bunch.target)
    return _frame_to_arrays(bunch.data), codes, names


def _read_csv(dataset: UciDataset, path: Path) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """A CSV without header: the feature columns, then the class label in the last column."""
    if not path.exists():
        raise InputError(f"{path}: {dataset.name} CSV file not found")

    frame = pd.read_csv(path, header=None)
    if frame.shape[1] < 2:
        raise InputError(f"{path}: columns: expected features then a label column, found {frame.shape[1]}")
    codes, names = encode_labels(frame.iloc[:, -1])
    return _frame_to_arrays(frame.iloc[:, :-1]), codes, names


def prepare_uci(name: str, root: str | Path, source_csv: str | Path | None = None) -> Path:
    """Write ``<root>/uci/<name>.npz`` from the source (or ``source_csv``), checked; return the path.

    OpenML data sets need a connection (the raw download is cached under ``<root>/openml``); the three
    data sets without a known public copy need ``source_csv``.
    """
    dataset = get_uci_dataset(name)
    root = Path(root)
    if source_csv is not None:
        X, y, names = _read_csv(dataset, Path(source_csv))
        where = str(source_csv)
    elif dataset.source == "sklearn":
        X, y, names = _load_from_sklearn(dataset)
        where = f"sklearn.datasets.{dataset.sklearn_loader}"
    elif dataset.source == "openml":
        X, y, names = _fetch_from_openml(dataset, root)
        where = f"OpenML data set {dataset.openml_id}"
    else:
        raise InputError(
            f"{dataset.name}: {dataset.note}; give the file: "
            f"`nox -s dml -- prepare uci:{dataset.name} --root DIR --archive FILE.csv`"
        )
    check_shape(dataset, X, y, where)
    path = cache_path(dataset.name, root)
    atomic_write(path, lambda handle: np.savez(handle, X=X, y=y, class_names=names.astype(str)))
    return path


def load_uci(name: str, root: str | Path | None = None) -> tuple[np.ndarray, np.ndarray]:
    """Features (n, d) float64 and class codes (n,) of a Table 2 data set, checked against its shape.

    Iris and Wine come from scikit-learn directly; the others from the file ``prepare_uci`` wrote.
    """
    dataset = get_uci_dataset(name)
    if dataset.source == "sklearn":
        X, y, _ = _load_from_sklearn(dataset)
        return X, y
    if root is None:
        raise InputError(
            f"{dataset.name}: data root: expected the --root of `nox -s dml -- prepare uci:{dataset.name} --root DIR`, "
            "found none"
        )
    path = cache_path(dataset.name, root)
    if not path.exists():
        raise InputError(
            f"{path}: {dataset.name} not prepared; run `nox -s dml -- prepare uci:{dataset.name} --root {root}` first"
        )
    try:
        with np.load(path, allow_pickle=False) as archive:
            X, y = archive["X"].astype(np.float64), archive["y"].astype(np.int64)
    except (ValueError, KeyError, OSError) as error:
        raise InputError(f"{path}: expected arrays X and y in a .npz file, could not read them ({error})") from None
    check_shape(dataset, X, y, str(path))
    return X, y
