"""The package's shape, as issue 20 fixed it: modules import each other without a cycle, an import inside a
function is rare and says why, and no function runs over 80 lines."""

from __future__ import annotations

import ast
import graphlib
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
PACKAGE = ROOT / "dml_core"
MAX_FUNCTION_LINES = 80


def _module_name(path: Path) -> str:
    parts = path.relative_to(ROOT).with_suffix("").parts
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


MODULES = {_module_name(path): path for path in sorted(PACKAGE.rglob("*.py"))}
TREES = {name: ast.parse(path.read_text(encoding="utf-8")) for name, path in MODULES.items()}


def _imported_modules(node: ast.Import | ast.ImportFrom, module: str) -> set[str]:
    """The package's modules an import statement loads: ``from pkg import name`` counts as ``pkg.name`` where
    that is a module, else as ``pkg``."""
    if isinstance(node, ast.Import):
        return {alias.name for alias in node.names} & MODULES.keys()
    base = node.module or ""
    if node.level:
        package = module.split(".") if MODULES[module].name == "__init__.py" else module.split(".")[:-1]
        base = ".".join(package[: len(package) - node.level + 1] + ([node.module] if node.module else []))
    found = {f"{base}.{alias.name}" if f"{base}.{alias.name}" in MODULES else base for alias in node.names}
    return found & MODULES.keys()


def _under_type_checking(tree: ast.AST) -> set[int]:
    return {
        id(node)
        for branch in ast.walk(tree)
        if isinstance(branch, ast.If) and "TYPE_CHECKING" in ast.unparse(branch.test)
        for node in ast.walk(branch)
    }


def _functions(tree: ast.AST) -> list[ast.FunctionDef | ast.AsyncFunctionDef]:
    return [node for node in ast.walk(tree) if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef)]


def _imports_inside_functions(tree: ast.AST) -> list[ast.Import | ast.ImportFrom]:
    inside = {
        id(node): node
        for function in _functions(tree)
        for node in ast.walk(function)
        if isinstance(node, ast.Import | ast.ImportFrom)
    }
    return list(inside.values())


def test_the_modules_import_each_other_without_a_cycle():
    graph = {}
    for name, tree in TREES.items():
        skipped = _under_type_checking(tree) | {id(node) for node in _imports_inside_functions(tree)}
        graph[name] = {
            imported
            for node in ast.walk(tree)
            if isinstance(node, ast.Import | ast.ImportFrom) and id(node) not in skipped
            for imported in _imported_modules(node, name)
            if imported != name
        }
    try:
        graphlib.TopologicalSorter(graph).prepare()
    except graphlib.CycleError as error:
        pytest.fail(f"import cycle: {' -> '.join(error.args[1])}")


def test_an_import_inside_a_function_says_why_on_the_line_before():
    """Lazy imports keep `dml --help` and light commands fast, or a heavy module off a path that rarely needs it;
    each is a deliberate exception, so it carries its reason."""
    problems = []
    for name, tree in TREES.items():
        lines = MODULES[name].read_text(encoding="utf-8").splitlines()
        for node in _imports_inside_functions(tree):
            before = lines[node.lineno - 2].strip()
            same = lines[node.lineno - 1]
            if (
                not (before.startswith("#") or before.startswith("from ") or before.startswith("import "))
                and "#" not in same
            ):
                problems.append(f"{MODULES[name].relative_to(ROOT)}:{node.lineno}")
    assert not problems, f"imports inside functions without a comment saying why: {problems}"


def test_no_function_is_longer_than_80_lines():
    long = [
        f"{MODULES[name].relative_to(ROOT)}:{function.lineno} {function.name} "
        f"({function.end_lineno - function.lineno + 1} lines)"
        for name, tree in TREES.items()
        for function in _functions(tree)
        if function.end_lineno - function.lineno + 1 > MAX_FUNCTION_LINES
    ]
    assert not long, f"functions over {MAX_FUNCTION_LINES} lines: {long}"
