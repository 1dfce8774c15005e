"""A recipe's component parameters checked against what the components accept, before anything trains.

Loss, sampler and head parameters are free-form mappings in the recipe schema (each component takes its own);
here they are checked against the constructor of the registered component (for a loss, the parameters
``losses.loss_parameters`` lists: a composite's recipe form): unknown names (with the accepted ones), missing
required ones, and values against the type annotations (pydantic). A nested base loss (cgml's and drml's ``base`` /
``base_params``) is checked the same way. Parameters the builder fills in from the run (``num_classes``,
``embedding_dim``, ``group_sizes``, ``images_per_class``, a sampler's ``labels`` and ``seed``, a head's input and
output widths) are not required.
"""

from __future__ import annotations

import inspect
import typing
from collections.abc import Callable, Mapping
from functools import cache
from pathlib import Path
from typing import Any

from pydantic import ConfigDict, TypeAdapter, ValidationError

from dml_core.data import SAMPLERS
from dml_core.data.registry import DATASETS
from dml_core.errors import InputError
from dml_core.losses import LOSSES, CompositeLoss, loss_parameters
from dml_core.losses.registry import RUN_VALUES
from dml_core.models import HEADS
from dml_core.recipes.settings import Recipe
from dml_core.recipes.settings_tree import origin_of

Problem = tuple[tuple[str, ...], str]  # (field path, message)

# Filled in by the builders from the run; a recipe may set them, never has to.
DERIVED_LOSS_PARAMETERS = frozenset(RUN_VALUES)
NESTED_LOSS = ("base", "base_params")  # a composite loss names its base loss and that loss's parameters


def component_problems(recipe: Recipe) -> list[Problem]:
    """Every problem with the recipe's loss, sampler (its smoke parameters included), head and dataset."""
    problems: list[Problem] = []
    if recipe.data.dataset not in DATASETS:
        problems.append((("data", "dataset"), DATASETS.unknown(recipe.data.dataset)))
    problems += _loss_problems(recipe.loss.name, dict(recipe.loss.params), ("loss",))
    sampler, params = recipe.sampler.name, dict(recipe.sampler.params)
    if sampler not in SAMPLERS:
        problems.append((("sampler", "name"), SAMPLERS.unknown(sampler)))
    else:
        accepted, derived = _accepted(SAMPLERS[sampler]), frozenset({"labels", "seed"})
        problems += _parameter_problems(accepted, params, derived, ("sampler", "params"), sampler)
        smoke = {**params, **recipe.smoke.sampler_params}
        problems += _parameter_problems(accepted, smoke, derived, ("smoke", "sampler_params"), sampler)
    head = recipe.model.head
    if head.name not in HEADS:
        problems.append((("model", "head", "name"), HEADS.unknown(head.name)))
    else:
        kind = HEADS[head.name]
        where = ("model", "head", "params")
        problems += _parameter_problems(
            _accepted(kind.cls), dict(head.params), kind.derived, where, head.name, kind.extra
        )
    return list(dict.fromkeys(problems))


def located_problems(recipe: Recipe, origins: Mapping[tuple[str, ...], str], file: Path | str) -> list[str]:
    """``component_problems`` as lines naming the file that set each field (``origins``; else ``file``)."""
    lines = []
    for path, message in component_problems(recipe):
        where = origin_of(path, origins) or str(file)
        lines.append(f"{where}: run {recipe.id}: field {'.'.join(path)}: {message}")
    return list(dict.fromkeys(lines))


def check_components(recipe: Recipe, origins: Mapping[tuple[str, ...], str], file: Path | str) -> None:
    """Raise ``InputError`` listing every component problem of ``recipe``, one per line."""
    lines = located_problems(recipe, origins, file)
    if lines:
        raise InputError(f"{len(lines)} recipe problem(s):\n  " + "\n  ".join(lines))


def _loss_problems(name: str, params: dict[str, Any], where: tuple[str, ...]) -> list[Problem]:
    if name not in LOSSES:
        return [((*where, "name"), LOSSES.unknown(name))]
    problems = _parameter_problems(loss_parameters(name), params, DERIVED_LOSS_PARAMETERS, (*where, "params"), name)
    base, base_params = NESTED_LOSS
    if issubclass(LOSSES[name], CompositeLoss) and isinstance(params.get(base), str):
        nested = params.get(base_params) or {}
        if isinstance(nested, Mapping):
            problems += _nested_loss_problems(params[base], dict(nested), (*where, "params"))
    return problems


def _nested_loss_problems(name: str, params: dict[str, Any], where: tuple[str, ...]) -> list[Problem]:
    if name not in LOSSES:
        return [((*where, NESTED_LOSS[0]), LOSSES.unknown(name))]
    if issubclass(LOSSES[name], CompositeLoss):
        return [((*where, NESTED_LOSS[0]), f"base must be a plain loss, not the composite {name!r}")]
    owner = (*where, NESTED_LOSS[1])
    return _parameter_problems(loss_parameters(name), params, DERIVED_LOSS_PARAMETERS, owner, name)


def _parameter_problems(
    accepted: Mapping[str, inspect.Parameter],
    params: dict[str, Any],
    derived: frozenset[str],
    where: tuple[str, ...],
    name: str,
    extra: Mapping[str, Any] | None = None,
) -> list[Problem]:
    """Unknown, missing and mistyped ``params`` of the component ``name``, which accepts ``accepted`` (and
    ``extra``: name -> type, read by its builder)."""
    extra = extra or {}
    settable = [key for key in accepted if key not in derived] + list(extra)
    problems: list[Problem] = []
    for key in params:
        if key not in accepted and key not in extra:
            problems.append(
                ((*where, key), f"{name!r} takes no parameter {key!r}; accepted: {', '.join(settable) or 'none'}")
            )
    for key, parameter in accepted.items():
        if parameter.default is inspect.Parameter.empty and key not in derived and key not in params:
            problems.append(((*where, key), f"{name!r} needs parameter {key!r}"))
    types = {**{key: p.annotation for key, p in accepted.items() if p.annotation is not p.empty}, **extra}
    for key, value in params.items():
        if key in types and key in settable:
            message = _type_problem(types[key], value)
            if message:
                problems.append(((*where, key), f"{name!r} parameter {key!r}: {message}; found {value!r}"))
    return problems


@cache
def _accepted(cls: Callable) -> dict[str, inspect.Parameter]:
    """The named parameters of a component's constructor, with their annotations resolved (a name that cannot be
    resolved is left unchecked)."""
    parameters = inspect.signature(cls).parameters
    init = cls.__init__ if inspect.isclass(cls) else cls
    try:
        hints = typing.get_type_hints(init)
    except (NameError, TypeError):
        hints = {}
    return {
        k: p.replace(annotation=hints.get(k, p.empty))
        for k, p in parameters.items()
        if p.kind not in (p.VAR_POSITIONAL, p.VAR_KEYWORD)
    }


@cache
def _adapter(annotation: Any) -> TypeAdapter | None:
    try:
        return TypeAdapter(annotation, config=ConfigDict(arbitrary_types_allowed=True))
    except Exception:  # an annotation pydantic cannot check (a tensor type, a protocol): left unchecked
        return None


def _type_problem(annotation: Any, value: Any) -> str | None:
    adapter = _adapter(annotation)
    if adapter is None:
        return None
    try:
        adapter.validate_python(value, strict=isinstance(value, str))
    except ValidationError as error:
        return "; ".join(item["msg"] for item in error.errors())
    return None
