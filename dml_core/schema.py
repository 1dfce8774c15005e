"""The one way the suite reads a typed file: a strict pydantic model, a YAML loader, one error format.

Every problem becomes one line that names the file, the field path, what was expected and what was found.

>>> class Demo(StrictModel):
...     epochs: int
>>> try:
...     parse_model({"epochs": "many", "lrr": 1}, Demo, "demo.yaml", what="recipe")
... except InputError as error:
...     print(error)
demo.yaml: invalid recipe: field epochs: Input should be a valid integer, ...; found 'many'; field lrr: Extra ...
"""

from __future__ import annotations

import reprlib
from collections import Counter
from collections.abc import Callable, Iterable, Mapping
from pathlib import Path
from typing import Any, TypeVar

import yaml
from pydantic import BaseModel, ConfigDict, ValidationError
from pydantic_core import ErrorDetails

from dml_core.errors import InputError

Model = TypeVar("Model", bound=BaseModel)
Location = tuple[int | str, ...]  # pydantic's path to a problem: ("tables", 2, "rows", 5, "metrics")
Locate = Callable[[Any, Location], str]  # words a path in the tree that was validated
# PyYAML's libyaml parser where the wheel has it (PyPI's do): the same safe loading and the same trees, read several
# times faster than by the pure-Python parser (recipes, published tables and claims are read many times a run).
SAFE_LOADER = getattr(yaml, "CSafeLoader", yaml.SafeLoader)


class StrictModel(BaseModel):
    """Unknown fields are errors; instances are immutable."""

    model_config = ConfigDict(extra="forbid", frozen=True)


def require_unique_ids(ids: Iterable[str], what: str) -> None:
    """Refuse repeated ids of a model's items with a ``ValueError`` (a validator's way: pydantic words it at the
    model's place) naming each repeated id once, sorted.

    >>> require_unique_ids(["table1", "table2"], "table ids")
    >>> require_unique_ids(["b", "a", "c", "b", "a", "b"], "claim ids")
    Traceback (most recent call last):
    ...
    ValueError: claim ids must be unique, found repeated a, b
    """
    repeated = sorted(item for item, count in Counter(ids).items() if count > 1)
    if repeated:
        raise ValueError(f"{what} must be unique, found repeated {', '.join(repeated)}")


def field_location(tree: Any, loc: Location) -> str:
    """Where a problem is, as ``field a.b`` (pydantic's path, dotted); the default for every loader.

    >>> field_location({}, ("gaps", 0, "see")), field_location({}, ())
    ('field gaps.0.see', 'field (top level)')
    """
    return "field " + (".".join(str(part) for part in loc) or "(top level)")


def by_id(nouns: Mapping[str, str], label: str = "id") -> Locate:
    """A ``locate`` that names the items of the lists in ``nouns`` by their ``label`` field (a file reader finds a
    row by its id, not by its index), then the rest of the path as a field.

    >>> locate = by_id({"tables": "table", "rows": "row"})
    >>> tree = {"tables": [{"id": "table1", "rows": [{"id": "ours-cub200"}, {}]}]}
    >>> locate(tree, ("tables", 0, "rows", 0, "metrics", "R@1"))
    'table table1 (tables[0]), row ours-cub200 (rows[0]), field metrics.R@1'
    >>> locate(tree, ("tables", 0, "rows", 1)), locate(tree, ("notes",))
    ('table table1 (tables[0]), rows[1]', 'field notes')
    """

    def locate(tree: Any, loc: Location) -> str:
        parts: list[str] = []
        node, index = tree, 0
        while index + 1 < len(loc) and loc[index] in nouns and isinstance(loc[index + 1], int):
            key, position = str(loc[index]), int(loc[index + 1])
            items = node.get(key) if isinstance(node, dict) else None
            node = items[position] if isinstance(items, list) and position < len(items) else None
            name = node.get(label) if isinstance(node, dict) else None
            parts.append(f"{nouns[key]} {name} ({key}[{position}])" if name else f"{key}[{position}]")
            index += 2
        if index < len(loc) or not parts:
            parts.append(field_location(tree, loc[index:]))
        return ", ".join(parts)

    return locate


def _shown_value_repr() -> reprlib.Repr:
    """What a message shows of the value found: enough to recognise it, never a whole file."""
    shown = reprlib.Repr()
    shown.maxlevel, shown.maxlist, shown.maxtuple, shown.maxdict = 2, 6, 6, 4
    shown.maxstring = shown.maxother = 80
    return shown


_SHOWN = _shown_value_repr()


def describe_problem(item: ErrorDetails) -> str:
    """One pydantic problem as ``message; found value`` (no value for a missing field, a mapping, or a message
    that already says what it found).

    >>> describe_problem({"type": "int_parsing", "loc": ("epochs",), "msg": "Not an int", "input": "many"})
    "Not an int; found 'many'"
    """
    message = item["msg"].removeprefix("Value error, ")
    found = item.get("input")
    if item["type"] == "missing" or isinstance(found, dict) or "found " in message:
        return message
    return f"{message}; found {_SHOWN.repr(found)}"


def format_validation_error(error: ValidationError, tree: Any = None, locate: Locate = field_location) -> str:
    """``field a.b: message; found value`` for each problem, ``; ``-joined; ``locate`` words the place."""
    return "; ".join(f"{locate(tree, item['loc'])}: {describe_problem(item)}" for item in error.errors())


def parse_model(tree: Any, model: type[Model], origin: str, what: str, locate: Locate = field_location) -> Model:
    """Validate ``tree`` as ``model``; a problem is an ``InputError`` naming ``origin`` and every bad field."""
    try:
        return model.model_validate(tree)
    except ValidationError as error:
        raise InputError(f"{origin}: invalid {what}: {format_validation_error(error, tree, locate)}") from None


def read_yaml_mapping(path: str | Path, what: str) -> dict:
    """A YAML file whose top level is a mapping, or an ``InputError`` naming the file."""
    path = Path(path)
    if not path.is_file():
        raise InputError(
            f"{path}: {what} not found" if not path.exists() else f"{path}: expected a {what}, found a folder"
        )
    return parse_yaml_mapping(path.read_bytes(), path)


def parse_yaml_mapping(content: bytes, path: str | Path) -> dict:
    """``content``, read from ``path``, as UTF-8 YAML whose top level is a mapping, or an ``InputError`` naming the
    file."""
    try:
        tree = yaml.load(content.decode("utf-8"), Loader=SAFE_LOADER)
    except (yaml.YAMLError, UnicodeDecodeError) as error:
        raise InputError(f"{path}: not valid YAML ({error})") from None
    if not isinstance(tree, dict):
        found = "an empty file" if tree is None else f"a {type(tree).__name__}"
        raise InputError(f"{path}: expected a mapping at the top level, found {found}")
    return tree


def load_yaml_model(path: str | Path, model: type[Model], what: str, locate: Locate = field_location) -> Model:
    """Read and validate a YAML file as ``model``."""
    return parse_model(read_yaml_mapping(path, what), model, str(path), what, locate)
