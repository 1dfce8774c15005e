"""noxfile.py defines the reproduce-<paper>, tables, nightly and environment sessions beside the old ones."""

import subprocess
import sys
from pathlib import Path

import pytest

from dml_core.vocabulary import PAPER_KEYS

# nox is not in pyproject's test extras (CI installs it outside the shared environment): skip where absent.
pytest.importorskip("nox")

ROOT = Path(__file__).resolve().parents[1]


def test_every_session_is_listed():
    listing = subprocess.run(
        [sys.executable, "-m", "nox", "--list", "-f", str(ROOT / "noxfile.py")],
        capture_output=True, text=True, check=True, cwd=ROOT,
    ).stdout  # fmt: skip
    names = {line.split(" -> ")[0][2:] for line in listing.splitlines() if " -> " in line}
    expected = {"tests", "lint", "bench", "environment", "tables", "nightly"} | {f"reproduce-{k}" for k in PAPER_KEYS}
    assert expected <= names
