"""noxfile.py defines the reproduce-<key> (papers and fair), dml, tables, nightly, gpu-check and environment
sessions."""

import importlib.util
import subprocess
import sys
from pathlib import Path

import pytest

from dml_core.vocabulary import RECIPE_KEYS

# nox is not in pyproject's test extras (CI installs it outside the shared environment): skip where absent.
pytest.importorskip("nox")

ROOT = Path(__file__).resolve().parents[1]


def test_every_session_is_listed():
    listing = subprocess.run(
        [sys.executable, "-m", "nox", "--list", "-f", str(ROOT / "noxfile.py")],
        capture_output=True, text=True, check=True, cwd=ROOT,
    ).stdout  # fmt: skip
    names = {line.split(" -> ")[0][2:] for line in listing.splitlines() if " -> " in line}
    expected = {"tests", "lint", "bench", "environment", "dml", "tables", "nightly", "gpu-check"}
    expected |= {f"reproduce-{k}" for k in RECIPE_KEYS}  # the papers' and the fair study's
    assert expected <= names


class FakeSession:
    """What a session function sees of nox: its arguments after ``--``; records the commands it runs."""

    def __init__(self, posargs: list[str]):
        self.posargs, self.calls = posargs, []

    def run(self, *args, **kwargs):
        self.calls.append((args, kwargs))


def _noxfile(monkeypatch):
    """noxfile.py loaded as a module, its shared environment's interpreter stubbed."""
    spec = importlib.util.spec_from_file_location("noxfile_under_test", ROOT / "noxfile.py")
    noxfile = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(noxfile)
    monkeypatch.setattr(noxfile, "shared_python", lambda session: "shared/bin/python")
    return noxfile


def test_the_gpu_check_session_runs_the_module_in_the_shared_environment_with_its_arguments(monkeypatch):
    session = FakeSession(["--parts", "smoke,resume", "--rerun-failed"])
    _noxfile(monkeypatch).gpu_check(session)
    ((args, kwargs),) = session.calls
    assert args == ("shared/bin/python", "-m", "dml_core.gpu_check", "--parts", "smoke,resume", "--rerun-failed")
    assert kwargs["env"]["HF_HUB_OFFLINE"] == "1"


def test_the_dml_session_is_the_form_every_message_names(monkeypatch):
    from dml_core.command_line import DML

    session = FakeSession(["weights", "--fetch"])
    _noxfile(monkeypatch).dml(session)
    assert [args for args, _ in session.calls] == [("shared/bin/python", "-m", "dml_core.cli", "weights", "--fetch")]
    assert DML == "nox -s dml --"  # the session is the form every message names
