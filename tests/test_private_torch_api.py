"""Every private torch name dml_core uses (a ``torch.x._y`` module, its attributes, ``torch._C``) against the oldest
torch pyproject.toml allows.

Why: a private name may vanish or be renamed in any release without a deprecation. The first H100 run (torch
2.11) stopped at its first multi-GPU step on ``_functional_collectives.all_gather_single``, a name only later
versions have, while every test passed on the pinned torch.

Method: torch 2.11 cannot be installed beside the pinned torch, so its source was read once, from the released
torch 2.11.0 wheel on PyPI (its Python files, the same on every platform): ``PRIVATE_NAMES`` records, for every
private name the code uses, whether torch 2.11.0 has it. The tests hold the ends together:

* a scan of dml_core's syntax trees finds every private torch name the code reaches (imports, attribute chains from
  torch or from an imported private module, ``getattr`` with a fallback), and the table lists exactly those: a new
  one fails here until it is checked against 2.11.0's source and added;
* a name used directly is one 2.11.0 has; one it lacks is reached only through ``getattr(module, name, None)``
  with a fallback, and the code still works with that name removed (torch 2.11 as far as that name goes);
* every name the table lists as in 2.11.0 exists in the installed torch (the pinned one, and any between).
"""

import ast
import importlib
import re
import tomllib
import warnings
from pathlib import Path
from types import SimpleNamespace

import pytest
import torch

ROOT = Path(__file__).resolve().parents[1]
CHECKED_AGAINST = "2.11"  # the torch release whose source PRIVATE_NAMES was read from (2.11.0)

# Private name -> whether torch 2.11.0 has it. Read in the 2.11.0 wheel: torch/distributed/_functional_collectives.py
# defines wait_tensor and all_gather_tensor, whose op (_c10d_functional::all_gather_into_tensor) has a registered
# backward there; all_gather_single is the name later versions give it, keeping all_gather_tensor as a deprecated
# alias. torch/nn/modules/batchnorm.py defines _BatchNorm (the base of BatchNorm1d/2d/3d and SyncBatchNorm).
# torch._assert_async is an aten op bound from torch._C, not a Python file: not read in the wheel, but in every
# release since 1.9 (pytorch#53276 gave it its underscore in 2021; its (self, assert_msg) overload is older than
# pytorch#131491, 2024), so in 2.11.0; the test below finds it in the installed torch.
PRIVATE_NAMES = {
    "torch._assert_async": True,
    "torch.nn.modules.batchnorm._BatchNorm": True,
    "torch.distributed._functional_collectives": True,
    "torch.distributed._functional_collectives.wait_tensor": True,
    "torch.distributed._functional_collectives.all_gather_tensor": True,
    "torch.distributed._functional_collectives.all_gather_single": False,
}


def _is_private(dotted: str) -> bool:
    """A torch path with a component that starts with one underscore (``__version__`` and the like are public)."""
    parts = dotted.split(".")
    return parts[0] == "torch" and any(part.startswith("_") and not part.startswith("__") for part in parts[1:])


class _TorchNames(ast.NodeVisitor):
    """The private torch names one module reaches: ``direct`` (imported or read as an attribute) and ``fallback``
    (read with ``getattr(owner, "name", default)``)."""

    def __init__(self) -> None:
        self.bound = {"torch": "torch"}  # local name -> the torch path it stands for
        self.direct: set[str] = set()
        self.fallback: set[str] = set()

    def _note(self, dotted: str, into: set[str]) -> None:
        if _is_private(dotted):
            into.add(dotted)

    def visit_Import(self, node: ast.Import) -> None:
        for alias in node.names:
            if alias.name.split(".")[0] == "torch":
                self.bound[alias.asname or "torch"] = alias.name if alias.asname else "torch"
                self._note(alias.name, self.direct)

    def visit_ImportFrom(self, node: ast.ImportFrom) -> None:
        if node.level == 0 and node.module and node.module.split(".")[0] == "torch":
            for alias in node.names:
                dotted = f"{node.module}.{alias.name}"
                self.bound[alias.asname or alias.name] = dotted
                self._note(dotted, self.direct)

    def _path(self, node: ast.expr) -> str | None:
        """The torch path of a chain like ``name.attr.attr`` rooted at a torch name; None for anything else."""
        attributes = []
        while isinstance(node, ast.Attribute):
            attributes.append(node.attr)
            node = node.value
        if isinstance(node, ast.Name) and node.id in self.bound:
            return ".".join([self.bound[node.id], *reversed(attributes)])
        return None

    def visit_Attribute(self, node: ast.Attribute) -> None:
        path = self._path(node)
        if path is None:
            self.generic_visit(node)
        else:
            self._note(path, self.direct)

    def visit_Call(self, node: ast.Call) -> None:
        is_getattr = isinstance(node.func, ast.Name) and node.func.id == "getattr"
        if is_getattr and len(node.args) == 3 and isinstance(node.args[1], ast.Constant):
            owner = self._path(node.args[0])
            if owner is not None:
                self._note(f"{owner}.{node.args[1].value}", self.fallback)
        self.generic_visit(node)


def _scan(source: str) -> _TorchNames:
    names = _TorchNames()
    names.visit(ast.parse(source))
    return names


def _used_by_the_package() -> tuple[dict[str, list[str]], dict[str, list[str]]]:
    """Private name -> the modules that use it, directly and through a fallback."""
    direct, fallback = {}, {}
    for path in sorted((ROOT / "dml_core").rglob("*.py")):
        names = _scan(path.read_text())
        where = str(path.relative_to(ROOT))
        for name in names.direct:
            direct.setdefault(name, []).append(where)
        for name in names.fallback:
            fallback.setdefault(name, []).append(where)
    return direct, fallback


def _installed(dotted: str) -> bool:
    parts = dotted.split(".")
    for cut in range(len(parts), 0, -1):
        try:
            found = importlib.import_module(".".join(parts[:cut]))
        except ImportError:
            continue
        for attribute in parts[cut:]:
            if not hasattr(found, attribute):
                return False
            found = getattr(found, attribute)
        return True
    return False


def test_the_scan_finds_direct_and_fallback_uses_through_aliases():
    names = _scan(
        "import torch\nimport torch.distributed._functional_collectives as fc\nfrom torch import _C\n"
        "from torch.utils import data\nfc.wait_tensor(x)\n_C._cuda_getDevice()\ntorch.cuda.synchronize()\n"
        "data.DataLoader\ntorch.__version__\ngetattr(fc, 'all_gather_single', None) or fc.all_gather_tensor\n"
    )
    assert names.direct == {
        "torch.distributed._functional_collectives",
        "torch.distributed._functional_collectives.wait_tensor",
        "torch.distributed._functional_collectives.all_gather_tensor",
        "torch._C",
        "torch._C._cuda_getDevice",
    }
    assert names.fallback == {"torch.distributed._functional_collectives.all_gather_single"}


def test_pyproject_allows_no_torch_older_than_the_one_the_names_were_checked_against():
    dependencies = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]["dependencies"]
    torch_requirements = [text for text in dependencies if re.match(r"torch\b(?!vision)", text)]
    assert torch_requirements == [f"torch>={CHECKED_AGAINST}"]


def test_the_table_lists_exactly_the_private_names_the_package_uses():
    direct, fallback = _used_by_the_package()
    assert sorted({*direct, *fallback}) == sorted(PRIVATE_NAMES), (
        "a private torch name is used but not in PRIVATE_NAMES (check it against torch "
        f"{CHECKED_AGAINST}.0's source and add it), or listed but no longer used: {direct} {fallback}"
    )


def test_a_private_name_the_oldest_torch_lacks_is_reached_only_through_a_fallback():
    direct, _ = _used_by_the_package()
    lacking = {name: where for name, where in direct.items() if not PRIVATE_NAMES.get(name, False)}
    assert not lacking, f"used directly, but torch {CHECKED_AGAINST}.0 does not have it: {lacking}"


@pytest.mark.parametrize("name", sorted(name for name, in_oldest in PRIVATE_NAMES.items() if in_oldest))
def test_every_name_the_oldest_torch_has_is_in_the_installed_one(name):
    assert _installed(name), f"{name}: in torch {CHECKED_AGAINST}.0, missing from torch {torch.__version__}"


def test_the_gather_works_without_the_names_the_oldest_torch_lacks(tmp_path, monkeypatch):
    """The training all-gather, forward and backward, on a one-process gloo group, with the functional collectives
    as torch 2.11.0 has them: the names it lacks hidden (not deleted: the installed torch's old names call them)."""
    from dml_core.training import distributed

    module = distributed.functional_collectives
    prefix = module.__name__ + "."
    lacking = {name.removeprefix(prefix) for name, in_oldest in PRIVATE_NAMES.items() if not in_oldest}
    old_name_calls = []

    def all_gather_tensor(*args, **kwargs):
        old_name_calls.append(args[1:])
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", FutureWarning)  # the installed torch's deprecation of the old name
            return module.all_gather_tensor(*args, **kwargs)

    as_in_oldest = {name: value for name, value in vars(module).items() if name not in lacking}
    monkeypatch.setattr(
        distributed,
        "functional_collectives",
        SimpleNamespace(**{**as_in_oldest, "all_gather_tensor": all_gather_tensor}),
    )
    torch.distributed.init_process_group("gloo", init_method=f"file://{tmp_path / 'store'}", rank=0, world_size=1)
    try:
        rows = torch.arange(12.0).reshape(4, 3).requires_grad_()
        gathered = distributed.Sharding(distributed.SINGLE_PROCESS, (4,))._gather_tensor(rows)
        (gathered * torch.arange(3.0)).sum().backward()
    finally:
        torch.distributed.destroy_process_group()
    assert [gather_dim for gather_dim, _ in old_name_calls] == [0]  # the old name took the gather
    torch.testing.assert_close(gathered.detach(), rows.detach())
    torch.testing.assert_close(rows.grad, torch.arange(3.0).expand(4, 3))
