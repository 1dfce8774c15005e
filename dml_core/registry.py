"""One lookup for every registry of named parts (losses, samplers, heads, backbones, datasets, optimisers, metrics...).

A :class:`Registry` knows what it holds and which recipe field names it, so every unknown name is worded the same way
wherever it is met. Standard library only, so that a registry of torch-free parts (the metrics) loads without torch.

>>> COLOURS = Registry("colour", "paint.colour", {"red": 1, "blue": 2})
>>> COLOURS.lookup("blue")
2
>>> COLOURS.lookup("green", where="paint.yaml")
Traceback (most recent call last):
...
dml_core.errors.InputError: paint.yaml: field paint.colour: unknown colour 'green'; expected one of blue, red
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping, MutableMapping
from typing import Generic, TypeVar

from dml_core.errors import InputError

Part = TypeVar("Part")


class Registry(MutableMapping[str, Part], Generic[Part]):
    """Name -> part, in the order given (the order some registries report in); ``lookup`` words the errors.
    Mutable, as a dict is: a part may be registered later (a test registers a fake one)."""

    def __init__(self, kind: str, field: str, parts: Mapping[str, Part]) -> None:
        self.kind = kind  # what one part is, in messages: "loss", "sampler", "head"
        self.field = field  # the recipe (or option) field that names one: "loss.name"
        self._parts = dict(parts)

    def __getitem__(self, name: str) -> Part:
        return self._parts[name]

    def __setitem__(self, name: str, part: Part) -> None:
        self._parts[name] = part

    def __delitem__(self, name: str) -> None:
        del self._parts[name]

    def __iter__(self) -> Iterator[str]:
        return iter(self._parts)

    def __len__(self) -> int:
        return len(self._parts)

    def __repr__(self) -> str:
        return f"Registry({self.kind!r}, {self.field!r}, {list(self._parts)})"

    @property
    def names(self) -> list[str]:
        """The accepted names, sorted (as every message lists them)."""
        return sorted(self._parts)

    def unknown(self, name: object) -> str:
        """The message for a name this registry does not hold, without place (for checks that collect problems).

        >>> Registry("loss", "loss.name", {"triplet": 0, "npair": 1}).unknown("tripplet")
        "unknown loss 'tripplet'; expected one of npair, triplet"
        """
        return f"unknown {self.kind} {name!r}; expected one of {', '.join(self.names)}"

    def lookup(self, name: str, where: str | None = None, field: str | None = None) -> Part:
        """The part registered as ``name``, or an ``InputError`` naming ``where`` (a file, when known), the field
        (``field``, else the registry's own; a command-line option or argument, ``--parts`` or ``BACKBONE``, as
        typed), the name and the accepted names."""
        if isinstance(name, str) and name in self._parts:
            return self._parts[name]
        place = f"{where}: " if where else ""
        field = field or self.field
        named = field if field.startswith("-") or field.isupper() else f"field {field}"
        raise InputError(f"{place}{named}: {self.unknown(name)}")
