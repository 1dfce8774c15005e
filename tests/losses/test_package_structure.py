"""How the losses package is put together: the registry imports the losses, never the other way round, and every
import is at the top of its module (no import loop broken by an import inside a function)."""

import ast
import graphlib
import pathlib

import dml_core.losses as losses_pkg

PACKAGE = pathlib.Path(losses_pkg.__file__).parent


def _imports(tree: ast.AST) -> set[str]:
    names = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            names |= {alias.name for alias in node.names}
        elif isinstance(node, ast.ImportFrom) and node.module:
            names |= {node.module} | {f"{node.module}.{alias.name}" for alias in node.names}
    return names


def _modules() -> dict[str, ast.Module]:
    return {path.stem: ast.parse(path.read_text()) for path in sorted(PACKAGE.glob("*.py"))}


def test_no_loss_module_imports_the_registry_or_the_package():
    for name, tree in _modules().items():
        if name in ("__init__", "registry"):
            continue
        wrong = {imported for imported in _imports(tree) if imported in ("dml_core.losses", "dml_core.losses.registry")}
        assert not wrong, f"{name}.py imports {wrong}"


def test_every_import_is_at_module_level():
    for name, tree in _modules().items():
        for function in ast.walk(tree):
            if isinstance(function, ast.FunctionDef | ast.AsyncFunctionDef):
                inner = [node for node in ast.walk(function) if isinstance(node, ast.Import | ast.ImportFrom)]
                assert not inner, f"{name}.py imports inside {function.name}() (line {inner[0].lineno})"


def test_the_modules_import_each_other_without_a_cycle():
    modules = _modules()
    graph = {
        name: {other for other in modules if f"dml_core.losses.{other}" in _imports(tree) and other != name}
        for name, tree in modules.items()
        if name != "__init__"
    }
    order = list(graphlib.TopologicalSorter(graph).static_order())  # raises CycleError on a loop
    assert order.index("base") < order.index("triplet") < order.index("registry")
    assert order.index("drml") < order.index("registry") and order.index("cgml") < order.index("registry")
