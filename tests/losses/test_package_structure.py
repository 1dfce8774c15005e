"""How the losses package is put together: the registry finds the losses in their modules, no loss module imports
the registry, and every import is at the top of its module (no import loop broken by an import inside a function);
a loss is added by adding its module, which the registry then holds."""

import ast
import graphlib
import pathlib

import dml_core.losses as losses_pkg
from dml_core.losses import LOSSES
from dml_core.losses.registry import declared_losses

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
    assert order.index("base") < order.index("triplet") and order.index("base") < order.index("registry")


def test_the_registry_holds_every_named_loss_of_every_module_and_nothing_else():
    """Read from the source, not from the registry: each class that sets ``name`` (and its ``aliases``) is a loss a
    recipe may name, and the registry holds exactly those."""
    declared = {}
    for name, tree in _modules().items():
        for node in tree.body:
            if isinstance(node, ast.ClassDef):
                values = {
                    target.id: ast.literal_eval(statement.value)
                    for statement in node.body
                    if isinstance(statement, ast.Assign)
                    for target in statement.targets
                    if isinstance(target, ast.Name) and target.id in ("name", "aliases")
                }
                declared |= {key: f"{name}.{node.name}" for key in [values.get("name"), *values.get("aliases", ())]}
    declared.pop(None, None)
    registered = {key: f"{cls.__module__.rpartition('.')[2]}.{cls.__name__}" for key, cls in LOSSES.items()}
    assert registered == declared


def test_a_module_added_to_the_package_brings_its_losses(tmp_path, monkeypatch):
    """A new module is the whole of adding a loss: its classes that declare a name are found, in the order the
    module defines them, and nothing it merely imports."""
    (tmp_path / "more_losses").mkdir()
    (tmp_path / "more_losses" / "__init__.py").write_text("")
    (tmp_path / "more_losses" / "circle.py").write_text(CIRCLE_LOSS)
    monkeypatch.syspath_prepend(str(tmp_path))
    found = declared_losses("more_losses")
    assert [(cls.__name__, cls.name, cls.aliases) for cls in found] == [("CircleLoss", "circle", ("circle_loss",))]


CIRCLE_LOSS = '''"""A loss a contributor adds."""

from torch import Tensor

from dml_core.losses.base import MetricLoss
from dml_core.losses.triplet import TripletLoss  # imported, not declared here


class CircleLoss(MetricLoss):
    name = "circle"
    aliases = ("circle_loss",)

    def compute_loss(self, embeddings: Tensor, labels: Tensor) -> Tensor:
        return embeddings.square().sum()


class Helper(CircleLoss):  # no name of its own: not a loss a recipe may name
    pass
'''
