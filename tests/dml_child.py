"""``python -m tests.dml_child SETUP.json ARGS...``: ``dml ARGS`` in a child process of a test, with the registry shrunk
to the test's tiny dataset as the parent's monkeypatch shrinks it in-process (a child does not inherit patches). With
``"block_extraction": MARKER`` in the setup, an archive's extraction stops after its first member, having written
MARKER, and waits: the parent kills the child there, in the middle of an extraction."""

from __future__ import annotations

import json
import sys
import tarfile
import time
from pathlib import Path

import pytest

from dml_core.cli import main
from tests.data.layouts import shrink_spec


def _block_extraction(marker: Path) -> None:
    extract = tarfile.TarFile.extract

    def first_member_then_wait(self, member, *args, **kwargs):
        extract(self, member, *args, **kwargs)
        marker.write_text("extracting\n")
        while True:
            time.sleep(60)

    tarfile.TarFile.extract = first_member_then_wait


def write_setup(path: Path, dataset: str, expected, files: dict[str, Path], block_extraction: Path | None = None):
    """The setup file the child reads: the dataset to shrink to ``expected`` rows and ``files``' checksums."""
    setup = {
        "dataset": dataset,
        "expected": [list(row) for row in expected],
        "files": {name: str(file) for name, file in files.items()},
        "block_extraction": str(block_extraction) if block_extraction else None,
    }
    path.write_text(json.dumps(setup))
    return path


def run(setup_file: Path, argv: list[str]) -> int:
    setup = json.loads(Path(setup_file).read_text())
    shrink_spec(
        pytest.MonkeyPatch(),
        setup["dataset"],
        [tuple(row) for row in setup["expected"]],
        {name: Path(file) for name, file in setup["files"].items()},
    )
    if setup["block_extraction"]:
        _block_extraction(Path(setup["block_extraction"]))
    return main(argv)


if __name__ == "__main__":
    sys.exit(run(Path(sys.argv[1]), sys.argv[2:]))
