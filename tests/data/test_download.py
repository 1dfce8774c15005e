"""The one downloader: resume (after a kill and after a drop), checksums, the User-Agent, a silent host abandoned;
sources tried in order, one line per failure."""

import hashlib
import json
import re

import pytest

from dml_core.data import download as downloader
from dml_core.data.download import (
    STALL_VARIABLE,
    USER_AGENT,
    DownloadError,
    download,
    first_that_downloads,
    md5_of,
    part_path,
    part_record_path,
)
from dml_core.data.index import read_index
from dml_core.data.prepare import prepare
from dml_core.data.registry import get_spec
from dml_core.errors import InputError
from tests.data.layouts import cars_archives, make_cars_kaggle, shrink_spec, use_catalog

PAYLOAD = bytes(range(256)) * 5000  # 1.28 MB: more than one read chunk


def _md5(data: bytes) -> str:
    return hashlib.md5(data).hexdigest()


def test_fresh_download_verifies_and_renames(http_server, tmp_path):
    url, served = http_server
    served.files["/a.tgz"] = PAYLOAD
    target = download(f"{url}/a.tgz", tmp_path / "a.tgz", _md5(PAYLOAD), progress=False)
    assert target.read_bytes() == PAYLOAD
    assert not part_path(target).exists()
    assert served.ranges == [None]


def test_truncated_download_resumes_with_a_range_request(http_server, tmp_path):
    url, served = http_server
    served.files["/a.tgz"] = PAYLOAD
    target = tmp_path / "a.tgz"
    part_path(target).write_bytes(PAYLOAD[:300_001])  # an interrupted earlier run
    download(f"{url}/a.tgz", target, _md5(PAYLOAD), progress=False)
    assert served.ranges == ["bytes=300001-"]
    assert md5_of(target) == _md5(PAYLOAD)


def test_server_ignoring_range_restarts_from_zero(http_server, tmp_path):
    url, served = http_server
    served.files["/a.tgz"] = PAYLOAD
    served.honour_range = False
    target = tmp_path / "a.tgz"
    part_path(target).write_bytes(b"garbage-prefix")
    download(f"{url}/a.tgz", target, _md5(PAYLOAD), progress=False)
    assert target.read_bytes() == PAYLOAD


def test_a_206_from_another_place_than_asked_is_not_appended(http_server, tmp_path):
    url, served = http_server
    served.files["/a.tgz"] = PAYLOAD
    served.misplaced_range = True  # "206, bytes 0-...": a proxy that got the range wrong
    target = tmp_path / "a.tgz"
    part_path(target).write_bytes(PAYLOAD[:1000])
    download(f"{url}/a.tgz", target, None, progress=False)  # no checksum: only the Content-Range check protects
    assert served.ranges == ["bytes=1000-", None]
    assert target.read_bytes() == PAYLOAD


def test_a_connection_dropped_mid_file_is_resumed_with_a_range_request(http_server, tmp_path):
    url, served = http_server
    served.files["/a.tgz"] = PAYLOAD
    served.drops["/a.tgz"] = 400_000  # the first connection closes after 400 kB of 1.28 MB
    said = []
    target = download(f"{url}/a.tgz", tmp_path / "a.tgz", _md5(PAYLOAD), progress=False, report=said.append)
    assert served.ranges == [None, "bytes=400000-"]
    assert target.read_bytes() == PAYLOAD
    host = url.removeprefix("http://")
    assert said == [f"a.tgz: {host}: connection dropped at 400,000 of 1,280,000 bytes; resuming with Range"]
    assert not part_record_path(target).exists()


def test_a_silent_host_is_abandoned_and_its_bytes_are_kept_for_the_next_try(http_server, tmp_path, monkeypatch):
    url, served = http_server
    served.files["/a.tgz"] = PAYLOAD
    served.stalls["/a.tgz"] = 300_000
    monkeypatch.setenv(STALL_VARIABLE, "0.5")
    target = tmp_path / "a.tgz"
    with pytest.raises(DownloadError) as error:
        download(f"{url}/a.tgz", target, _md5(PAYLOAD), progress=False)
    assert error.value.line == f"{url.removeprefix('http://')}: no data for 0.5 s; abandoned"
    assert part_path(target).stat().st_size == 300_000
    del served.stalls["/a.tgz"]
    download(f"{url}/a.tgz", target, _md5(PAYLOAD), progress=False)  # the next run resumes where it stopped
    assert served.ranges[-1] == "bytes=300000-" and target.read_bytes() == PAYLOAD


def test_the_progress_line_shows_the_wait_for_a_silent_host(http_server, tmp_path, monkeypatch, capsys):
    url, served = http_server
    served.files["/a.tgz"] = PAYLOAD
    served.stalls["/a.tgz"] = 1000
    monkeypatch.setattr(downloader, "TICK_SECONDS", 0.05)
    monkeypatch.setattr(downloader, "WAITING_AFTER_SECONDS", 0.1)
    monkeypatch.setenv(STALL_VARIABLE, "0.6")
    with pytest.raises(DownloadError, match=r"no data for 0\.6 s; abandoned"):
        download(f"{url}/a.tgz", tmp_path / "a.tgz", None, progress=True)
    assert re.search(r"waiting: no data for \d s \(abandoned at 0.6 s\)", capsys.readouterr().err)


def test_a_part_from_another_url_is_resumed_only_for_the_same_checksum(http_server, tmp_path):
    url, served = http_server
    served.files["/a.tgz"] = served.files["/mirror/a.tgz"] = PAYLOAD
    target = tmp_path / "a.tgz"
    for expected, resumed in ((None, None), (_md5(PAYLOAD), "bytes=5000-")):
        part_path(target).write_bytes(PAYLOAD[:5000])
        part_record_path(target).write_text(json.dumps({"url": f"{url}/a.tgz", "expected": {"md5": _md5(PAYLOAD)}}))
        download(f"{url}/mirror/a.tgz", target, expected, progress=False)
        assert served.ranges[-1] == resumed and target.read_bytes() == PAYLOAD
        target.unlink()


def test_bytes_that_fail_their_checksum_are_said_and_the_next_source_is_tried(http_server, tmp_path):
    url, served = http_server
    served.files["/bad/a.tgz"] = b"another release" + PAYLOAD[15:]
    served.files["/good/a.tgz"] = PAYLOAD
    said = []
    target = first_that_downloads(
        [f"{url}/bad/a.tgz", f"{url}/good/a.tgz"],
        lambda source: download(source, tmp_path / "a.tgz", _md5(PAYLOAD), progress=False),
        "a.tgz",
        said.append,
    )
    assert target.read_bytes() == PAYLOAD
    (line,) = said
    assert line.startswith(f"a.tgz: {url.removeprefix('http://')}: checksum mismatch: expected md5 {_md5(PAYLOAD)}")
    assert line.endswith("; trying the next source")


def test_complete_part_file_is_accepted_after_416(http_server, tmp_path):
    url, served = http_server
    served.files["/a.tgz"] = PAYLOAD
    target = tmp_path / "a.tgz"
    part_path(target).write_bytes(PAYLOAD)
    download(f"{url}/a.tgz", target, _md5(PAYLOAD), progress=False)
    assert served.ranges == [f"bytes={len(PAYLOAD)}-"]
    assert target.read_bytes() == PAYLOAD


def test_checksum_mismatch_is_refused_and_leaves_no_file(http_server, tmp_path):
    url, served = http_server
    served.files["/a.tgz"] = PAYLOAD
    target = tmp_path / "a.tgz"
    with pytest.raises(InputError, match=r"checksum mismatch.*expected md5 0{32}, found " + _md5(PAYLOAD)):
        download(f"{url}/a.tgz", target, "0" * 32, progress=False)
    assert not target.exists() and not part_path(target).exists()


def test_existing_verified_file_is_not_fetched_again(http_server, tmp_path):
    url, served = http_server
    target = tmp_path / "a.tgz"
    target.write_bytes(PAYLOAD)
    download(f"{url}/a.tgz", target, _md5(PAYLOAD), progress=False)
    assert served.ranges == []


def test_http_error_names_the_url(http_server, tmp_path):
    url, _ = http_server
    with pytest.raises(InputError, match=r"/missing.tgz: download failed \(HTTP 404"):
        download(f"{url}/missing.tgz", tmp_path / "m.tgz", None, progress=False)


def test_every_request_names_the_suite_in_its_user_agent(http_server, tmp_path):
    url, served = http_server
    served.files["/a.tgz"] = PAYLOAD
    download(f"{url}/a.tgz", tmp_path / "a.tgz", _md5(PAYLOAD), progress=False)
    assert served.user_agents == [USER_AGENT] and USER_AGENT.startswith("dml-suite/")


def test_a_sha256_is_checked_like_an_md5(http_server, tmp_path):
    url, served = http_server
    served.files["/w.pth"] = PAYLOAD
    with pytest.raises(DownloadError, match=r"checksum mismatch for \S+: expected sha256 0{64}, found") as error:
        download(f"{url}/w.pth", tmp_path / "w.pth", sha256="0" * 64, progress=False)
    assert error.value.line.startswith(f"{error.value.host}: checksum mismatch: expected sha256 0")
    target = download(f"{url}/w.pth", tmp_path / "w.pth", sha256=hashlib.sha256(PAYLOAD).hexdigest(), progress=False)
    assert target.read_bytes() == PAYLOAD


def _tiny_cars_served(monkeypatch, tmp_path, served):
    """The tiny Kaggle class-folder copy served as /cars.zip, the registry shrunk to it."""
    expected = make_cars_kaggle(tmp_path / "src")
    (archive,) = cars_archives("kaggle", tmp_path, tmp_path / "src")
    served.files["/cars.zip"] = archive.read_bytes()
    shrink_spec(monkeypatch, "cars196", expected)
    return expected, archive


def test_a_refusing_source_costs_one_line_and_the_next_one_is_used(monkeypatch, http_server, tmp_path):
    url, served = http_server
    expected, archive = _tiny_cars_served(monkeypatch, tmp_path, served)
    served.statuses["/car_ims.tgz"] = 403
    use_catalog(
        monkeypatch,
        tmp_path / "catalog.yaml",
        {"cars196": [[("car_ims.tgz", f"{url}/car_ims.tgz", None)], [(archive.name, f"{url}/cars.zip", None)]]},
    )
    said = []
    prepared = prepare(get_spec("cars196"), tmp_path / "data", progress=False, report=said.append)
    host = url.removeprefix("http://")
    assert said == [f"cars196: {host}: HTTP 403 Forbidden; trying the next source"]
    assert served.user_agents == [USER_AGENT, USER_AGENT]
    assert sorted((row.path, row.label, row.split) for row in read_index(prepared.dataset_dir)) == sorted(expected)
    assert any("with no checksum to check" in note for note in prepared.notes)


def test_when_every_source_fails_the_error_names_each_url_and_the_manual_route(monkeypatch, http_server, tmp_path):
    url, served = http_server
    _tiny_cars_served(monkeypatch, tmp_path, served)
    served.files["/page.zip"] = b"<html>sign in to download</html>"  # a host's page instead of the archive
    served.statuses["/car_ims.tgz"] = 403
    routes = [[("car_ims.tgz", f"{url}/car_ims.tgz", None)], [("cars.zip", f"{url}/page.zip", None)]]
    use_catalog(monkeypatch, tmp_path / "catalog.yaml", {"cars196": routes})
    said = []
    with pytest.raises(InputError) as error:
        prepare(get_spec("cars196"), tmp_path / "data", progress=False, report=said.append)
    assert said[0].endswith("HTTP 403 Forbidden; trying the next source")
    assert said[1].startswith(f"cars196: {url.removeprefix('http://')}: not the archive it names (")
    assert said[1].endswith("; no source left")
    message = str(error.value)
    assert f"{url}/car_ims.tgz (HTTP 403 Forbidden)" in message and f"{url}/page.zip (not the archive" in message
    by_hand = "by hand: by hand: `curl -LO https://example.invalid/copy.tgz`"
    assert f"{by_hand}, then `nox -s dml -- prepare cars196 --root" in message
    assert "--archive copy.tgz`" in message and "\n" not in message
    assert not (tmp_path / "data" / "cars196" / "cars.zip").exists()
