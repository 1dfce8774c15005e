import hashlib

import pytest

from dml_core.data.download import download, md5_of, part_path
from dml_core.errors import InputError

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
