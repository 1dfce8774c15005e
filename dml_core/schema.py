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

from pathlib import Path
from typing import Any, TypeVar

import yaml
from pydantic import BaseModel, ConfigDict, ValidationError

from dml_core.errors import InputError

Model = TypeVar("Model", bound=BaseModel)


class StrictModel(BaseModel):
    """Unknown fields are errors; instances are immutable."""

    model_config = ConfigDict(extra="forbid", frozen=True)


def format_validation_error(error: ValidationError) -> str:
    """``field a.b: message; found value`` for each problem, ``; ``-joined (a mapping's value is not repeated)."""
    problems = []
    for item in error.errors():
        field = ".".join(str(part) for part in item["loc"]) or "(top level)"
        found = item.get("input")
        found_text = "" if isinstance(found, dict) else f"; found {found!r}"
        message = item["msg"].removeprefix("Value error, ")
        problems.append(f"field {field}: {message}{found_text}")
    return "; ".join(problems)


def parse_model(tree: Any, model: type[Model], origin: str, what: str) -> Model:
    """Validate ``tree`` as ``model``; a problem is an ``InputError`` naming ``origin`` and every bad field."""
    try:
        return model.model_validate(tree)
    except ValidationError as error:
        raise InputError(f"{origin}: invalid {what}: {format_validation_error(error)}") from None


def read_yaml_mapping(path: str | Path, what: str) -> dict:
    """A YAML file whose top level is a mapping, or an ``InputError`` naming the file."""
    path = Path(path)
    if not path.is_file():
        raise InputError(
            f"{path}: {what} not found" if not path.exists() else f"{path}: expected a {what}, found a folder"
        )
    try:
        tree = yaml.safe_load(path.read_text(encoding="utf-8"))
    except (yaml.YAMLError, UnicodeDecodeError) as error:
        raise InputError(f"{path}: not valid YAML ({error})") from None
    if not isinstance(tree, dict):
        raise InputError(f"{path}: expected a mapping at the top level, found {type(tree).__name__}")
    return tree


def load_yaml_model(path: str | Path, model: type[Model], what: str) -> Model:
    """Read and validate a YAML file as ``model``."""
    return parse_model(read_yaml_mapping(path, what), model, str(path), what)
