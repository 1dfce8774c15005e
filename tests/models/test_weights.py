"""Weight-file lookup: explicit path, cache dir, download only when allowed; sha256 checks; error texts."""

from __future__ import annotations

import hashlib
import os

import pytest

from dml_core.data.download import USER_AGENT, part_path
from dml_core.errors import InputError, OutputError
from dml_core.models import weights
from dml_core.models.weights import (
    WEIGHT_FILES,
    WeightFile,
    downloads_allowed,
    resolve_weight_file,
    verify_weight_file,
    weights_cache_dir,
)
from tests.data.conftest import loopback_server

CONTENT = b"pretend weights"
DIGEST = hashlib.sha256(CONTENT).hexdigest()


def _entry(sha256: str = DIGEST[:8], url: str = "https://example.invalid/w-abc.pth") -> WeightFile:
    return WeightFile(file_name="w-abc.pth", sha256=sha256, url=url, backbone="toy")


@pytest.fixture
def cache(tmp_path, monkeypatch):
    folder = tmp_path / "cache"
    monkeypatch.setenv("DML_WEIGHTS_DIR", str(folder))
    return folder


def test_cache_dir_default_and_override(monkeypatch, tmp_path):
    monkeypatch.delenv("DML_WEIGHTS_DIR", raising=False)
    assert weights_cache_dir() == weights.Path("~/.cache/dml/weights").expanduser()
    monkeypatch.setenv("DML_WEIGHTS_DIR", str(tmp_path))
    assert weights_cache_dir() == tmp_path


@pytest.mark.parametrize(
    ("variable", "value", "allowed"),
    [("HF_HUB_OFFLINE", "1", False), ("DML_OFFLINE", "1", False), ("DML_OFFLINE", "0", True)],
)
def test_offline_switches(monkeypatch, variable, value, allowed):
    monkeypatch.delenv("HF_HUB_OFFLINE", raising=False)
    monkeypatch.delenv("DML_OFFLINE", raising=False)
    monkeypatch.setenv(variable, value)
    assert downloads_allowed() is allowed


def test_prefix_and_full_hash_verification(tmp_path):
    path = tmp_path / "w-abc.pth"
    path.write_bytes(CONTENT)
    assert verify_weight_file(path, _entry()) == DIGEST
    assert verify_weight_file(path, _entry(sha256=DIGEST)) == DIGEST
    assert _entry().verification == "sha256 prefix"
    assert _entry(sha256=DIGEST).verification == "full sha256"
    wrong_full = DIGEST[:8] + ("0" if DIGEST[8] != "0" else "1") + DIGEST[9:]
    with pytest.raises(InputError, match=f"expected {wrong_full}, found {DIGEST}"):
        verify_weight_file(path, _entry(sha256=wrong_full))


def test_explicit_path_wins_and_a_missing_one_is_named(tmp_path, cache):
    path = tmp_path / "elsewhere.pth"
    path.write_bytes(CONTENT)
    assert resolve_weight_file(_entry(), path) == (path, DIGEST)
    with pytest.raises(InputError, match=r"looked in: .*nowhere\.pth"):
        resolve_weight_file(_entry(), tmp_path / "nowhere.pth")


def test_cached_file_is_used(cache):
    cache.mkdir()
    (cache / "w-abc.pth").write_bytes(CONTENT)
    assert resolve_weight_file(_entry()) == (cache / "w-abc.pth", DIGEST)


def test_offline_fails_at_once_without_trying_the_network(cache, monkeypatch):
    monkeypatch.setenv("DML_OFFLINE", "1")
    monkeypatch.setattr(weights, "download_weight_file", lambda *args: pytest.fail("tried to download"))
    with pytest.raises(InputError) as error:
        resolve_weight_file(_entry())
    message = str(error.value)
    for part in ("w-abc.pth", DIGEST[:8], "sha256 prefix", "https://example.invalid/w-abc.pth", str(cache)):
        assert part in message


def test_online_lookup_downloads_into_the_cache_through_the_suites_downloader(tmp_path, cache, monkeypatch):
    monkeypatch.delenv("HF_HUB_OFFLINE", raising=False)
    monkeypatch.delenv("DML_OFFLINE", raising=False)
    source = tmp_path / "published.pth"
    source.write_bytes(CONTENT)
    path, digest = resolve_weight_file(_entry(url=source.as_uri()))  # file:// goes through the same urllib path
    assert (path, digest) == (cache / "w-abc.pth", DIGEST)
    assert path.read_bytes() == CONTENT


def test_failed_download_is_one_input_error(tmp_path, cache, monkeypatch):
    monkeypatch.delenv("HF_HUB_OFFLINE", raising=False)
    monkeypatch.delenv("DML_OFFLINE", raising=False)
    with pytest.raises(InputError, match="Download failed"):
        resolve_weight_file(_entry(url=(tmp_path / "absent.pth").as_uri()))
    assert not (cache / "w-abc.pth").exists()


def test_downloaded_file_with_a_wrong_hash_is_refused(tmp_path, cache, monkeypatch):
    monkeypatch.delenv("HF_HUB_OFFLINE", raising=False)
    monkeypatch.delenv("DML_OFFLINE", raising=False)
    source = tmp_path / "published.pth"
    source.write_bytes(b"something else")
    with pytest.raises(InputError, match=r"sha256 does not match w-abc\.pth"):
        resolve_weight_file(_entry(url=source.as_uri()))
    assert not (cache / "w-abc.pth").exists()


def test_weight_table_entries_are_full_digests_starting_with_the_published_prefix():
    for name, entry in WEIGHT_FILES.items():
        assert entry.backbone == name
        assert entry.url.endswith("/" + entry.file_name)
        stem_hash = entry.file_name.rsplit("-", 1)[1].removesuffix(".pth")
        assert entry.verification == "full sha256" and len(entry.sha256) == 64 and int(entry.sha256, 16) >= 0
        assert entry.sha256.startswith(stem_hash)


def test_a_file_with_the_right_prefix_but_another_full_digest_is_refused(tmp_path, cache, monkeypatch):
    cache.mkdir()
    (cache / "w-abc.pth").write_bytes(CONTENT)
    same_prefix_other_file = DIGEST[:8] + ("0" if DIGEST[8] != "0" else "1") + DIGEST[9:]
    monkeypatch.setitem(WEIGHT_FILES, "toy", _entry(sha256=same_prefix_other_file))
    with pytest.raises(InputError, match=rf"w-abc.pth \(full sha256 check\): expected {same_prefix_other_file}"):
        resolve_weight_file(WEIGHT_FILES["toy"])
    monkeypatch.setitem(WEIGHT_FILES, "toy", _entry(sha256=DIGEST))
    assert resolve_weight_file(WEIGHT_FILES["toy"]) == (cache / "w-abc.pth", DIGEST)


def test_a_prefix_only_entry_says_so_when_it_fails(tmp_path):
    path = tmp_path / "w-abc.pth"
    path.write_bytes(b"other bytes")
    with pytest.raises(InputError, match=r"\(sha256 prefix check: its full digest is not known\)"):
        verify_weight_file(path, _entry())


def test_the_digest_is_remembered_until_the_file_changes(tmp_path, monkeypatch):
    path = tmp_path / "w-abc.pth"
    path.write_bytes(CONTENT)
    hashed = []
    real = weights.file_sha256
    monkeypatch.setattr(weights, "file_sha256", lambda p: hashed.append(p) or real(p))
    for _ in range(3):
        assert verify_weight_file(path, _entry(sha256=DIGEST)) == DIGEST
    assert len(hashed) == 1 and (tmp_path / weights.SHA256_RECORDS).is_file()
    path.write_bytes(b"pretend weighs")  # same size, another content: a new modification time
    os.utime(path, ns=(path.stat().st_atime_ns, path.stat().st_mtime_ns + 1_000_000))
    with pytest.raises(InputError, match="sha256 does not match"):
        verify_weight_file(path, _entry(sha256=DIGEST))
    assert len(hashed) == 2


def test_a_read_only_folder_only_costs_a_hash_each_time(tmp_path, monkeypatch):
    path = tmp_path / "w-abc.pth"
    path.write_bytes(CONTENT)

    def read_only(*args):
        raise OutputError(f"{tmp_path}: cannot write here (Read-only file system)")

    monkeypatch.setattr(weights, "atomic_write_json", read_only)
    assert verify_weight_file(path, _entry(sha256=DIGEST)) == DIGEST
    assert verify_weight_file(path, _entry(sha256=DIGEST)) == DIGEST
    assert not (tmp_path / weights.SHA256_RECORDS).exists()


@pytest.fixture
def online(monkeypatch):
    monkeypatch.delenv("HF_HUB_OFFLINE", raising=False)
    monkeypatch.delenv("DML_OFFLINE", raising=False)


def test_a_dead_mirror_costs_one_line_and_the_next_serves_the_file(cache, online, http_server, capsys):
    url, served = http_server
    served.files["/b/w-abc.pth"] = CONTENT
    served.statuses["/a/w-abc.pth"] = 503
    entry = WeightFile("w-abc.pth", DIGEST, f"{url}/a/w-abc.pth", "toy", mirrors=(f"{url}/b/w-abc.pth",))
    assert resolve_weight_file(entry) == (cache / "w-abc.pth", DIGEST)
    err = capsys.readouterr().err
    assert f"w-abc.pth: {url.removeprefix('http://')}: HTTP 503 Service Unavailable; trying the next source" in err
    assert served.user_agents == [USER_AGENT, USER_AGENT]


def test_a_partial_weight_download_resumes_with_a_progress_bar(cache, online, http_server, capsys):
    url, served = http_server
    served.files["/w-abc.pth"] = CONTENT
    cache.mkdir()
    part_path(cache / "w-abc.pth").write_bytes(CONTENT[:5])  # an interrupted earlier fetch
    assert resolve_weight_file(_entry(sha256=DIGEST, url=f"{url}/w-abc.pth")) == (cache / "w-abc.pth", DIGEST)
    assert served.ranges == ["bytes=5-"]
    assert "w-abc.pth: 100%" in capsys.readouterr().err


def test_every_mirror_failing_names_each_url_and_why(cache, online, http_server):
    url, _ = http_server
    entry = WeightFile("w-abc.pth", DIGEST, f"{url}/a.pth", "toy", mirrors=(f"{url}/b.pth",))
    with pytest.raises(InputError, match=rf"Download failed: w-abc.pth: every source failed: {url}/a.pth \(HTTP 404 "
                       rf"Not Found\); {url}/b.pth \(HTTP 404 Not Found\)"):  # fmt: skip
        resolve_weight_file(entry)


@pytest.fixture
def http_server():
    with loopback_server() as server:
        yield server


def test_torch_hubs_folder_is_looked_in_after_the_suites(cache, tmp_path, monkeypatch):
    monkeypatch.setenv("TORCH_HOME", str(tmp_path / "torch"))
    hub = tmp_path / "torch" / "hub" / "checkpoints"
    assert weights.hub_checkpoints_dir() == hub
    hub.mkdir(parents=True)
    (hub / "w-abc.pth").write_bytes(CONTENT)  # where torchvision saved it
    monkeypatch.setenv("DML_OFFLINE", "1")
    assert resolve_weight_file(_entry()) == (hub / "w-abc.pth", DIGEST)
    assert list(hub.iterdir()) == [hub / "w-abc.pth"], "nothing is written into torch hub's folder"
    cache.mkdir()
    (cache / "w-abc.pth").write_bytes(CONTENT)
    assert resolve_weight_file(_entry()) == (cache / "w-abc.pth", DIGEST)
    (cache / "w-abc.pth").unlink()
    (hub / "w-abc.pth").unlink()
    with pytest.raises(InputError, match=rf"looked in: {cache / 'w-abc.pth'}, {hub / 'w-abc.pth'}\)"):
        resolve_weight_file(_entry())
