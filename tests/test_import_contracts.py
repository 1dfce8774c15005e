"""The import directions of ``[tool.importlinter]`` in pyproject.toml, checked by import-linter: the package keeps
them, every part of it is named in them, and an arrow back up breaks them."""

from __future__ import annotations

import shutil
import subprocess
import sys
import tomllib
from pathlib import Path

from tests.processes import completed_report

ROOT = Path(__file__).resolve().parents[1]
PYPROJECT = ROOT / "pyproject.toml"
CONTRACTS = {c["id"]: c for c in tomllib.loads(PYPROJECT.read_text())["tool"]["importlinter"]["contracts"]}
LINT_IMPORTS = Path(sys.executable).with_name("lint-imports")


def _lint_imports(root: Path) -> subprocess.CompletedProcess:
    """import-linter over the package under ``root``, with this repository's contracts."""
    return subprocess.run(
        [str(LINT_IMPORTS), "--no-cache", "--no-logo", str(PYPROJECT)],
        cwd=root,
        env={"PATH": "", "PYTHONPATH": str(root)},
        capture_output=True,
        text=True,
        timeout=300,
    )


def _layer_names(contract: dict) -> set[str]:
    return {name.strip() for layer in contract["layers"] for name in layer.replace(":", "|").split("|")}


def test_the_package_keeps_its_import_contracts():
    completed = _lint_imports(ROOT)
    assert completed.returncode == 0, completed_report(completed)
    assert f"Contracts: {len(CONTRACTS)} kept, 0 broken." in completed.stdout, completed_report(completed)


def test_every_part_of_the_package_has_its_place_in_the_layers():
    packages = {path.name for path in (ROOT / "dml_core").iterdir() if (path / "__init__.py").is_file()}
    assert packages - _layer_names(CONTRACTS["layers"]) == set(), "a package outside the layers"
    tables = ROOT / "dml_core" / "tables"
    assert {path.name for path in tables.glob("*.py")} == {"__init__.py"}, "a module loose in tables/"
    assert {path.name for path in tables.iterdir() if (path / "__init__.py").is_file()} == _layer_names(
        CONTRACTS["tables"]
    )


def test_an_import_back_up_the_layers_breaks_the_gate(tmp_path):
    shutil.copytree(ROOT / "dml_core", tmp_path / "dml_core", ignore=shutil.ignore_patterns("__pycache__"))
    low = tmp_path / "dml_core" / "data" / "registry.py"
    low.write_text(low.read_text() + "\nfrom dml_core.training import trainer  # back up the layers\n")
    completed = _lint_imports(tmp_path)
    assert completed.returncode == 1, completed_report(completed)
    assert "dml_core.data is not allowed to import dml_core.training" in completed.stdout, completed_report(completed)
