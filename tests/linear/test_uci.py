import dataclasses
import inspect
from types import SimpleNamespace

import numpy as np
import pandas as pd
import pytest
import rdata
import sklearn.datasets

from dml_core.errors import InputError
from dml_core.linear import uci_routes
from dml_core.linear.package_files import DebianPackage
from dml_core.linear.uci import (
    UCI_DATASETS,
    Shape,
    cache_path,
    get_uci_dataset,
    load_uci,
    prepare_every_uci,
    prepare_uci,
    uci_source,
)
from dml_core.linear.uci_routes import PackageMember, TableFormat
from tests.linear.packages import make_deb, sha256


def test_registry_has_the_15_data_sets_of_table_1():
    assert list(UCI_DATASETS) == [
        "Australian", "Cars", "Ecoli", "German", "Glass", "Iris", "Isolet", "Monk1",
        "Solar", "Vehicle", "Wine", "Pendigits", "Coil20", "Letter", "Usps",
    ]  # fmt: skip
    assert UCI_DATASETS["Coil20"].paper_shape == Shape(1440, 1024, 20)
    assert UCI_DATASETS["Ecoli"].paper_shape == Shape(336, 343, 8)  # as printed
    assert UCI_DATASETS["Ecoli"].expected_shape == Shape(336, 7, 8)  # what the source delivers
    for dataset in UCI_DATASETS.values():
        assert dataset.routes or dataset.note  # a set without a route says why (a CSV the user supplies)
        assert dataset.source_shape is None or dataset.note  # every deviation from Table 1 is explained
    offline = {name for name, dataset in UCI_DATASETS.items() if any(route.offline for route in dataset.routes)}
    assert offline == {"Iris", "Wine", "Monk1"}
    packaged = {
        name for name, dataset in UCI_DATASETS.items() if any(isinstance(r, PackageMember) for r in dataset.routes)
    }
    assert packaged == {"German", "Glass", "Vehicle", "Pendigits", "Letter"}
    assert get_uci_dataset("usps").name == "Usps"
    with pytest.raises(InputError, match=r"^field dataset: unknown UCI data set 'mnist'; expected one of Australian, "):
        get_uci_dataset("mnist")


@pytest.mark.parametrize(("name", "shape"), [("Iris", (150, 4)), ("Wine", (178, 13))])
def test_bundled_sets_load_offline_and_round_trip_through_the_cache(name, shape, tmp_path):
    X, y = load_uci(name)
    assert X.shape == shape and len(np.unique(y)) == 3
    path = prepare_uci(name, tmp_path)
    assert path == tmp_path / "uci" / f"{name}.npz"
    with np.load(path) as archive:
        np.testing.assert_array_equal(archive["X"], X)
        np.testing.assert_array_equal(archive["y"], y)


def _write_cache(root, name, X, y):
    path = cache_path(name, root)
    path.parent.mkdir(parents=True)
    np.savez(path, X=X, y=y, class_names=np.array([str(c) for c in np.unique(y)]))
    return path


def test_loads_a_prepared_openml_set_and_checks_its_shape(tmp_path):
    rng = np.random.default_rng(0)
    X, y = rng.normal(size=(214, 9)), np.arange(214) % 6
    _write_cache(tmp_path, "Glass", X, y)
    loaded_X, loaded_y = load_uci("glass", tmp_path)
    np.testing.assert_array_equal(loaded_X, X)
    np.testing.assert_array_equal(loaded_y, y)

    _write_cache(tmp_path / "bad", "Glass", X[:, :8], y)
    with pytest.raises(InputError, match=r"Glass\.npz: Glass n_features: expected 9, found 8"):
        load_uci("Glass", tmp_path / "bad")
    with pytest.raises(InputError, match="not prepared"):
        load_uci("Vehicle", tmp_path)


def test_offline_fetch_fails_at_once_with_what_to_do(tmp_path, monkeypatch):
    def no_network(*args, **kwargs):
        raise OSError("Network is unreachable")

    def must_not_be_called(**kwargs):
        raise AssertionError("fetch_openml must not run without a connection")

    monkeypatch.setattr(uci_routes.socket, "create_connection", no_network)
    monkeypatch.setattr("sklearn.datasets.fetch_openml", must_not_be_called)
    expected = r"Australian: .*OpenML data set 40981: cannot reach api\.openml\.org .*prepare uci:Australian"
    with pytest.raises(InputError, match=expected):
        prepare_uci("Australian", tmp_path)
    assert not cache_path("Australian", tmp_path).exists()


def test_a_failed_fetch_names_the_command_that_takes_a_csv_instead(tmp_path, monkeypatch):
    def refused(**kwargs):
        raise OSError("HTTP Error 503")

    monkeypatch.setattr(uci_routes.socket, "create_connection", _reachable)
    monkeypatch.setattr("sklearn.datasets.fetch_openml", refused)
    with pytest.raises(
        InputError,
        match=r"failed \(HTTP Error 503\).*`nox -s dml -- prepare uci:Usps --root DIR --archive FILE\.csv`",
    ):
        prepare_uci("Usps", tmp_path)


def _reachable(*args, **kwargs):
    return SimpleNamespace(close=lambda: None)


def test_openml_frame_is_encoded_checked_and_cached(tmp_path, monkeypatch):
    """A connected run, with OpenML replaced by a frame in its real shape (Australian: 690 x 14, categorical)."""
    rng = np.random.default_rng(1)
    frame = pd.DataFrame({f"attr{i}": pd.Categorical(rng.integers(1, 4, 690).astype(str)) for i in range(14)})
    target = pd.Series(pd.Categorical(rng.integers(0, 2, 690).astype(str)))
    calls = []

    def fake_fetch_openml(**kwargs):
        calls.append(kwargs)
        return SimpleNamespace(data=frame, target=target)

    real_signature = inspect.signature(sklearn.datasets.fetch_openml)
    monkeypatch.setattr(uci_routes.socket, "create_connection", _reachable)
    monkeypatch.setattr("sklearn.datasets.fetch_openml", fake_fetch_openml)
    path = prepare_uci("Australian", tmp_path)
    assert calls[0]["data_id"] == 40981 and calls[0]["data_home"] == str(tmp_path / "uci" / "packages" / "openml")
    real_signature.bind(**calls[0])  # the arguments the real fetch_openml accepts
    X, y = load_uci("Australian", tmp_path)
    assert X.shape == (690, 14) and X.dtype == np.float64
    np.testing.assert_array_equal(X[:, 0], frame["attr0"].cat.codes.to_numpy())
    np.testing.assert_array_equal(y, target.astype(int).to_numpy())
    assert path.exists()


def test_csv_source_for_sets_without_a_public_copy(tmp_path):
    rng = np.random.default_rng(2)
    frame = pd.DataFrame(rng.normal(size=(392, 8)))
    frame[8] = np.where(np.arange(392) % 2, "american", "other")
    csv = tmp_path / "cars.csv"
    frame.to_csv(csv, header=False, index=False)
    with pytest.raises(InputError, match=r"--archive FILE\.csv"):
        prepare_uci("Cars", tmp_path)
    prepare_uci("Cars", tmp_path, source_csv=csv)
    X, y = load_uci("Cars", tmp_path)
    assert X.shape == (392, 8) and sorted(np.unique(y)) == [0, 1]
    frame.iloc[:100].to_csv(csv, header=False, index=False)
    with pytest.raises(InputError, match="n_samples: expected 392, found 100"):
        prepare_uci("Cars", tmp_path, source_csv=csv)


def _glass_from_a_fixture_package(tmp_path):
    """Glass's real route, its package replaced by a fixture .deb in the real layout (a Glass-shaped .rda member)."""
    rng = np.random.default_rng(3)
    frame = pd.DataFrame(rng.normal(size=(214, 9)), columns=[f"f{i}" for i in range(9)])
    frame["Type"] = pd.Categorical(np.repeat(["1", "2", "3", "5", "6", "7"], [70, 76, 17, 13, 9, 29]))
    rdata.write_rda(tmp_path / "Glass.rda", {"Glass": frame})
    member = "usr/lib/R/site-library/mlbench/data/Glass.rda"
    folder = tmp_path / "root" / "uci" / "packages"
    folder.mkdir(parents=True)
    deb = make_deb(folder / "fixture_1_amd64.deb", {member: (tmp_path / "Glass.rda").read_bytes()})
    package = DebianPackage("fixture", "1", "amd64", "pool/f/fixture_1_amd64.deb", sha256(deb), "GPL-2")
    route = PackageMember(
        package, member, sha256(tmp_path / "Glass.rda"), TableFormat("rda", "Type", rda_object="Glass"), "x"
    )
    return frame, route


def test_a_set_is_prepared_from_its_first_route_that_reads(tmp_path, monkeypatch):
    frame, route = _glass_from_a_fixture_package(tmp_path)
    broken = dataclasses.replace(route, member_sha256="0" * 64)
    monkeypatch.setitem(UCI_DATASETS, "Glass", dataclasses.replace(UCI_DATASETS["Glass"], routes=(broken, route)))
    reported = []
    path = prepare_uci("Glass", tmp_path / "root", allow_download=False, report=reported.append)
    assert reported == [f"Glass: {broken.describe()} failed; trying the next route"]
    X, y = load_uci("Glass", tmp_path / "root")
    np.testing.assert_array_equal(X, frame.iloc[:, :9].to_numpy())
    assert np.bincount(y).tolist() == [70, 76, 17, 13, 9, 29]
    assert uci_source("Glass", tmp_path / "root") == route.describe() and path.name == "Glass.npz"


def test_every_set_a_route_gives_is_prepared_and_the_others_are_named(tmp_path, monkeypatch):
    # Offline: no package can be fetched and OpenML cannot be reached; Glass's package is a fixture already here.
    _, route = _glass_from_a_fixture_package(tmp_path)
    monkeypatch.setitem(UCI_DATASETS, "Glass", dataclasses.replace(UCI_DATASETS["Glass"], routes=(route,)))
    monkeypatch.setattr(uci_routes.socket, "create_connection", _unreachable)
    outcomes = {o.name: o for o in prepare_every_uci(tmp_path / "root", allow_download=False, report=lambda line: None)}
    assert {name for name, o in outcomes.items() if o.prepared} == {"Iris", "Wine", "Glass", "Monk1"}
    assert outcomes["Cars"].line.endswith("--archive FILE.csv`") and "no stable public copy" in outcomes["Cars"].line
    assert "downloads are off" in outcomes["Vehicle"].line
    again = {o.name: o for o in prepare_every_uci(tmp_path / "root", allow_download=False, report=lambda line: None)}
    assert again["Glass"].line.startswith("prepared earlier: ")  # read back and checked, not fetched again


def _unreachable(*args, **kwargs):
    raise OSError("Network is unreachable")
