"""The loss registry: names to classes, the parameters a recipe may give each loss, and the builder.

A loss declares its name (and any ``aliases``) on its class, in its own module; ``LOSSES`` holds every loss the
package's modules declare (``declared_losses``), so adding a loss is adding its module.

``build_loss(name, **params)`` constructs a loss from a recipe's ``loss`` (``name`` and ``params``), with clear
errors. A composite loss (``CompositeLoss``: cgml, drml) is built through its ``from_recipe``: the builder
hands it ``build_base_loss``, which builds the base loss the recipe names, so no loss module imports this one.
``with_run_values`` is the one rule that fills a run's class count, embedding width, batch groups and images per
class into a loss's parameters, for the top loss (the trainer's ``build_loss_for``) and the base losses inside a
composite.
"""

from __future__ import annotations

import importlib
import inspect
import pkgutil
import typing
from collections.abc import Mapping
from functools import cache, partial
from typing import Any

from torch import nn

from dml_core.errors import InputError
from dml_core.losses.base import CompositeLoss, MetricLoss
from dml_core.registry import Registry

PACKAGE = "dml_core.losses"


def declared_losses(package: str = PACKAGE) -> list[type[MetricLoss]]:
    """Every loss ``package`` defines: each class of one of its modules that declares its own ``name`` (a loss is
    written once, in its module; adding a module adds its losses), by module, then as each module defines them."""
    found = []
    for module_info in pkgutil.iter_modules(importlib.import_module(package).__path__):
        if f"{package}.{module_info.name}" == __name__:
            continue
        module = importlib.import_module(f"{package}.{module_info.name}")
        found += [
            value
            for value in vars(module).values()
            if isinstance(value, type) and issubclass(value, MetricLoss) and value.__module__ == module.__name__
            if "name" in vars(value)
        ]
    return found


LOSSES: Registry[type[MetricLoss]] = Registry(
    "loss", "loss.name", {name: cls for cls in declared_losses() for name in (cls.name, *cls.aliases)}
)

# What a run fills in (``with_run_values``); a recipe may set them, never has to.
RUN_VALUES = ("num_classes", "embedding_dim", "group_sizes", "images_per_class")


def loss_parameters(name: str) -> dict[str, inspect.Parameter]:
    """The parameters a recipe may give the loss ``name``, by name, with their annotations resolved.

    A plain loss takes its constructor's. A composite takes those of its ``from_recipe`` (the base loss by name,
    ``base`` and ``base_params``, and what building it needs), then the constructor's optional ones; the
    constructor's required parameters are the built losses it receives.

    >>> list(loss_parameters("cgml"))[:4]
    ['base', 'base_params', 'num_classes', 'embedding_dim']
    """
    return dict(_recipe_parameters(LOSSES.lookup(name)))


@cache
def _recipe_parameters(cls: type[MetricLoss]) -> dict[str, inspect.Parameter]:
    if not issubclass(cls, CompositeLoss):
        return _parameters(cls.__init__)
    from_recipe = _parameters(cls.from_recipe.__func__, skip=2)  # cls and build_base
    options = {key: p for key, p in _parameters(cls.__init__).items() if p.default is not inspect.Parameter.empty}
    return from_recipe | {key: p for key, p in options.items() if key not in from_recipe}


def with_run_values(
    name: str,
    params: Mapping[str, Any],
    num_classes: int | None = None,
    embedding_dim: int | None = None,
    group_sizes: tuple[int, ...] | None = None,
    images_per_class: int | None = None,
) -> dict[str, Any]:
    """``params`` with the run's values for those of ``RUN_VALUES`` that the loss ``name`` takes and ``params``
    leaves unset (a value of None fills nothing). Proxies need the first two, two-stream losses the group sizes;
    damlrrm takes the sampler's images per class (the bound of its Prim loop).

    >>> with_run_values("proxy_anchor", {"alpha": 64.0}, num_classes=10, embedding_dim=512, group_sizes=(60, 60))
    {'alpha': 64.0, 'num_classes': 10, 'embedding_dim': 512}
    """
    filled = dict(params)
    accepted = loss_parameters(name) if name in LOSSES else {}  # build_loss reports an unknown name
    run = {
        "num_classes": num_classes,
        "embedding_dim": embedding_dim,
        "group_sizes": group_sizes,
        "images_per_class": images_per_class,
    }
    for key, value in run.items():
        if key in accepted and key not in filled and value is not None:
            filled[key] = value
    return filled


def build_loss(name: str, **params: Any) -> nn.Module:
    """Construct the loss registered as ``name`` with ``params`` (as a recipe gives them).

    Raises ``InputError`` for an unknown name (listing the known ones), an unknown parameter (listing
    the accepted ones) or a missing required one (e.g. ``num_classes`` for proxy losses).

    >>> build_loss("triplet", margin=0.1, mining="semihard").margin
    0.1
    >>> build_loss("cgml", base="triplet", base_params={"margin": 0.1}).base.margin
    0.1
    """
    cls = LOSSES.lookup(name)
    accepted = loss_parameters(name)
    unknown = sorted(set(params) - set(accepted))
    if unknown:
        raise InputError(f"loss {name!r}: unknown parameter(s) {', '.join(unknown)}; accepted: {', '.join(accepted)}")
    missing = [k for k, p in accepted.items() if p.default is inspect.Parameter.empty and k not in params]
    if missing:
        raise InputError(f"loss {name!r}: missing required parameter(s) {', '.join(missing)}")
    if issubclass(cls, CompositeLoss):
        return cls.from_recipe(partial(build_base_loss, name), **params)
    return cls(**params)


def build_base_loss(
    owner: str,
    name: str,
    params: Mapping[str, Any] | None,
    num_classes: int | None,
    embedding_dim: int | None,
) -> nn.Module:
    """The base loss ``name`` of the composite ``owner``, with ``params`` and the run's values that it takes.

    Group sizes and images per class describe the composite's batch, not what its base loss sees, so they are not
    passed on.
    """
    if name in LOSSES and issubclass(LOSSES[name], CompositeLoss):
        itself = " itself" if LOSSES[name] is LOSSES[owner] else " (a composite loss)"
        raise InputError(f"loss {owner!r}: base must be a plain loss, not {name!r}{itself}")
    if params is not None and not isinstance(params, Mapping):
        raise InputError(f"loss {owner!r}: base_params must be a mapping of the parameters of {name!r}; got {params!r}")
    filled = with_run_values(name, params or {}, num_classes=num_classes, embedding_dim=embedding_dim)
    return build_loss(name, **filled)


def _parameters(function: Any, skip: int = 1) -> dict[str, inspect.Parameter]:
    """The named parameters of ``function`` after its first ``skip`` (self), annotations resolved (none where a name
    cannot be resolved)."""
    try:
        hints = typing.get_type_hints(function)
    except (NameError, TypeError):
        hints = {}
    parameters = list(inspect.signature(function).parameters.values())[skip:]
    return {
        p.name: p.replace(annotation=hints.get(p.name, p.empty))
        for p in parameters
        if p.kind not in (p.VAR_POSITIONAL, p.VAR_KEYWORD)
    }
