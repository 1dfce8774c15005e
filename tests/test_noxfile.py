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


def test_the_gpu_check_session_runs_the_module_in_the_shared_environment_with_its_arguments(monkeypatch):
    spec = importlib.util.spec_from_file_location("noxfile_under_test", ROOT / "noxfile.py")
    noxfile = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(noxfile)
    monkeypatch.setattr(noxfile, "shared_python", lambda session: "shared/bin/python")

    class Session:
        def __init__(self):
            self.posargs, self.calls = ["--parts", "smoke,resume", "--rerun-failed"], []

        def run(self, *args, **kwargs):
            self.calls.append((args, kwargs))

    session = Session()
    noxfile.gpu_check(session)
    ((args, kwargs),) = session.calls
    assert args == ("shared/bin/python", "-m", "dml_core.gpu_check", "--parts", "smoke,resume", "--rerun-failed")
    assert kwargs["env"]["HF_HUB_OFFLINE"] == "1"


def test_the_dml_session_is_the_form_every_message_names(monkeypatch):
    from dml_core.command_line import DML

    spec = importlib.util.spec_from_file_location("noxfile_under_test", ROOT / "noxfile.py")
    noxfile = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(noxfile)
    monkeypatch.setattr(noxfile, "shared_python", lambda session: "shared/bin/python")

    class Session:
        def __init__(self, posargs):
            self.posargs, self.calls = posargs, []

        def run(self, *args, **kwargs):
            self.calls.append(args)

    session = Session(["weights", "--fetch"])
    noxfile.dml(session)
    assert session.calls == [("shared/bin/python", "-m", "dml_core.cli", "weights", "--fetch")]
    assert DML == "nox -s dml --"  # the session is the form every message names
