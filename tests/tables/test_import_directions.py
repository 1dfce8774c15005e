"""The tables' subpackages import one way (``dml_core/tables/__init__.py``): ``gate`` imports none of the others,
``pages`` only ``gate``, ``fair`` and ``nightly`` both of those and never each other."""

import ast
from pathlib import Path

import pytest

TABLES = Path(__file__).resolve().parents[2] / "dml_core" / "tables"
MAY_IMPORT = {
    "gate": set(),
    "pages": {"gate"},
    "fair": {"gate", "pages"},
    "nightly": {"gate", "pages"},
}


def _imported_subpackages(path: Path) -> set[str]:
    found = set()
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        names = [node.module or ""] if isinstance(node, ast.ImportFrom) else []
        names += [alias.name for alias in node.names] if isinstance(node, ast.Import) else []
        for name in names:
            parts = name.split(".")
            if parts[:2] == ["dml_core", "tables"] and len(parts) > 2:
                found.add(parts[2])
    return found


def test_every_module_sits_in_a_subpackage():
    assert {path.name for path in TABLES.glob("*.py")} == {"__init__.py"}
    assert {path.name for path in TABLES.iterdir() if path.is_dir() and path.name != "__pycache__"} == set(MAY_IMPORT)


@pytest.mark.parametrize("subpackage", sorted(MAY_IMPORT))
def test_a_subpackage_imports_only_the_ones_below_it(subpackage):
    wrong = {
        f"{path.relative_to(TABLES).as_posix()} imports {sorted(imported)}"
        for path in sorted((TABLES / subpackage).glob("*.py"))
        if (imported := _imported_subpackages(path) - MAY_IMPORT[subpackage] - {subpackage})
    }
    assert not wrong, sorted(wrong)
