"""A paper's assumptions and readings: ``reproduce/<key>/assumptions.yaml``, each stated once, with an id.

- An *assumption* is a choice the recipes make where the paper is silent, with no alternative the suite runs
  (``id: text``); recipe files refer to it by id.
- A *reading* is an open choice the suite can run either way: what the paper says or leaves open
  (``question``), its values (each with what it means), the ``default`` and ``why`` it is the default. Recipe
  files say what each value changes for their runs (``readings:`` in a recipe file); ``dml reproduce KEY
  --reading NAME=VALUE`` runs another value.
"""

from __future__ import annotations

import re
from pathlib import Path

from pydantic import Field, model_validator

from dml_core.errors import InputError
from dml_core.schema import StrictModel, load_yaml_model

ASSUMPTIONS_FILE = "assumptions.yaml"
ID_PATTERN = r"^[a-z0-9][a-z0-9.+-]*$"


class Reading(StrictModel):
    question: str  # what the paper says (section, equation, table) and why it is open
    values: dict[str, str] = Field(min_length=2)  # value -> what it means
    default: str
    why: str  # why the default is the default

    @model_validator(mode="after")
    def _default_is_a_value(self) -> Reading:
        if self.default not in self.values:
            raise ValueError(f"default {self.default!r} is not one of the values {sorted(self.values)}")
        return self


class PaperAssumptions(StrictModel):
    paper: str
    assumptions: dict[str, str] = Field(default_factory=dict)  # id -> text
    readings: dict[str, Reading] = Field(default_factory=dict)  # name -> reading

    @model_validator(mode="after")
    def _names_are_ids(self) -> PaperAssumptions:

        for name in [*self.assumptions, *self.readings]:
            if not re.match(ID_PATTERN, name):
                raise ValueError(f"id {name!r}: expected lower-case letters, digits, '.', '+' and '-'")
        for name in self.readings:
            if not name.startswith(f"{self.paper}.") and "." in name:
                raise ValueError(f"reading {name!r}: a dotted reading name starts with the paper key {self.paper!r}")
        return self

    def text(self, assumption_id: str, origin: str) -> str:
        """The text of an assumption, or an error naming ``origin`` and the known ids."""
        if assumption_id not in self.assumptions:
            raise InputError(
                f"{origin}: field assumptions: unknown assumption {assumption_id!r}; known in "
                f"reproduce/{self.paper}/{ASSUMPTIONS_FILE}: {', '.join(sorted(self.assumptions))}"
            )
        return self.assumptions[assumption_id]


def load_paper_assumptions(folder: Path) -> PaperAssumptions | None:
    """``<folder>/assumptions.yaml``; None where there is none (a folder of one's own recipes: their assumptions
    are sentences and they have no readings)."""
    path = Path(folder) / ASSUMPTIONS_FILE
    if not path.is_file():
        return None
    loaded = load_yaml_model(path, PaperAssumptions, what="assumptions file")
    if loaded.paper != Path(folder).name:
        raise InputError(f"{path}: field paper: expected {Path(folder).name!r} (its folder), found {loaded.paper!r}")
    return loaded
