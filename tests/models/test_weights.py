"""Weight-file lookup: explicit path, cache dir, download only when allowed; sha256 checks; error texts."""

from __future__ import annotations

import hashlib

import pytest

from dml_core.errors import InputError
from dml_core.models import weights
from dml_core.models.weights import (
    WEIGHT_FILES,
    WeightFile,
    downloads_allowed,
    resolve_weight_file,
    verify_weight_file,
    weights_cache_dir,
)

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


def test_online_lookup_downloads_into_the_cache_through_torch_hub(tmp_path, cache, monkeypatch):
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


def test_weight_table_entries_follow_the_torch_hub_naming_convention():
    for name, entry in WEIGHT_FILES.items():
        assert entry.backbone == name
        assert entry.url.endswith("/" + entry.file_name)
        stem_hash = entry.file_name.rsplit("-", 1)[1].removesuffix(".pth")
        assert entry.sha256.startswith(stem_hash) or stem_hash.startswith(entry.sha256)
