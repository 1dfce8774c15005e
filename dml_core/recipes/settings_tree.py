"""Recipe settings as nested mappings: dotted paths, layered merges, and where each value came from.

A layer of settings may write a path nested (``loss: {params: {alpha: 26}}``) or dotted
(``loss.params.alpha: 26``); both mean the same. Merging a layer over a tree merges mappings key by key and
replaces everything else (lists included). Every leaf remembers the origin of the layer that set it, so an error
about a field can name the file (and entry) that wrote it.
"""

from __future__ import annotations

import copy
from collections.abc import Mapping
from typing import Any

from dml_core.errors import InputError

Path = tuple[str, ...]


def expand_dotted(layer: Mapping[str, Any], origin: str) -> dict[str, Any]:
    """``{"a.b": 1, "a": {"c": 2}}`` -> ``{"a": {"b": 1, "c": 2}}``, recursively.

    >>> expand_dotted({"loss.params.alpha": 26, "loss": {"name": "damlrrm"}}, "x.yaml")
    {'loss': {'params': {'alpha': 26}, 'name': 'damlrrm'}}
    """
    out: dict[str, Any] = {}
    for key, value in layer.items():
        if not isinstance(key, str) or not key:
            raise InputError(f"{origin}: expected a field name, found {key!r}")
        parts = key.split(".")
        if any(not part for part in parts):
            raise InputError(f"{origin}: field {key!r}: empty part in a dotted path")
        nested: Any = expand_dotted(value, origin) if isinstance(value, Mapping) else copy.deepcopy(value)
        for part in reversed(parts[1:]):
            nested = {part: nested}
        _merge_into(out, {parts[0]: nested}, origin, None, ())
    return out


def merge(tree: dict[str, Any], layer: Mapping[str, Any], origin: str, origins: dict[Path, str]) -> None:
    """Merge ``layer`` (dotted or nested) into ``tree`` in place, recording ``origin`` for each leaf it sets.

    >>> tree, origins = {"loss": {"name": "triplet", "params": {"margin": 0.1}}}, {}
    >>> merge(tree, {"loss.params.margin": 0.2, "training": {"iterations": 5}}, "b.yaml", origins)
    >>> tree
    {'loss': {'name': 'triplet', 'params': {'margin': 0.2}}, 'training': {'iterations': 5}}
    >>> sorted(origins.items())
    [(('loss', 'params', 'margin'), 'b.yaml'), (('training', 'iterations'), 'b.yaml')]
    """
    _merge_into(tree, expand_dotted(layer, origin), origin, origins, ())


def _merge_into(tree: dict, layer: Mapping, origin: str, origins: dict[Path, str] | None, prefix: Path) -> None:
    for key, value in layer.items():
        path = (*prefix, key)
        if isinstance(value, Mapping) and isinstance(tree.get(key), dict):
            _merge_into(tree[key], value, origin, origins, path)
            continue
        tree[key] = copy.deepcopy(value)
        if origins is not None:
            for stale in [p for p in origins if p[: len(path)] == path]:
                del origins[stale]
            for leaf in leaf_paths(value, path):
                origins[leaf] = origin


def leaf_paths(value: Any, prefix: Path = ()) -> list[Path]:
    """The paths of every leaf under ``value`` (an empty mapping is a leaf).

    >>> leaf_paths({"a": {"b": 1, "c": {}}, "d": [1]})
    [('a', 'b'), ('a', 'c'), ('d',)]
    """
    if isinstance(value, Mapping) and value:
        return [leaf for key, child in value.items() for leaf in leaf_paths(child, (*prefix, key))]
    return [prefix]


def origin_of(path: Path, origins: Mapping[Path, str]) -> str | None:
    """The origin of ``path`` or of the nearest enclosing (or enclosed) path that was set.

    >>> origin_of(("loss", "params", "alhpa"), {("loss", "params", "alhpa"): "a.yaml", ("loss", "name"): "b.yaml"})
    'a.yaml'
    >>> origin_of(("loss", "params"), {("loss", "params", "alpha"): "a.yaml"})
    'a.yaml'
    """
    for length in range(len(path), 0, -1):
        if path[:length] in origins:
            return origins[path[:length]]
    below = [origin for leaf, origin in origins.items() if leaf[: len(path)] == path]
    return below[0] if below else None


def dotted(path: Path) -> str:
    """``("loss", "params", "alpha")`` -> ``"loss.params.alpha"``."""
    return ".".join(str(part) for part in path)
