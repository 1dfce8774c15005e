"""A paper's assumptions and readings: ``reproduce/<key>/assumptions.yaml``, each stated once, with an id.

- An *assumption* is a choice the recipes make where the paper is silent, with no alternative the suite runs
  (``id: text``); recipe files refer to it by id.
- A *reading* is an open choice the suite can run either way: what the paper says or leaves open
  (``question``), its values (each with what it means), the ``default`` and ``why`` it is the default. Recipe
  files say what each value changes for their runs (``readings:`` in a recipe file); ``dml reproduce KEY
  --reading NAME=VALUE`` runs another value.
- A *shared reading* is a reading every run of every paper rests on (``reproduce/readings.yaml``, an undotted name):
  the same question for the five papers, so it is stated once, with the settings each value changes
  (``patches``) beside it. A paper may take another default of it, with its own why (``shared_readings:`` in its
  assumptions.yaml). A paper's own readings are named ``<key>.<name>``.
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

from pydantic import Field, model_validator

from dml_core.errors import InputError
from dml_core.schema import StrictModel, load_yaml_model

ASSUMPTIONS_FILE = "assumptions.yaml"
SHARED_READINGS_FILE = "readings.yaml"  # in the recipes folder, beside the paper folders
ID_PATTERN = r"^[a-z0-9][a-z0-9.+-]*$"


def is_shared_reading(name: str) -> bool:
    """Whether a reading is shared by every paper (reproduce/readings.yaml): an undotted name; a paper's own
    readings are named ``<key>.<name>`` (``PaperAssumptions`` checks both).

    >>> is_shared_reading("precision"), is_shared_reading("cgml.graphs")
    (True, False)
    """
    return "." not in name


class Reading(StrictModel):
    question: str  # what the paper says (section, equation, table) and why it is open
    values: dict[str, str] = Field(min_length=2)  # value -> what it means
    default: str
    why: str  # why the default is the default
    # a shared reading's settings for each value, applied to every run (a paper's readings: in its recipe files)
    patches: dict[str, dict[str, Any]] | None = None

    @model_validator(mode="after")
    def _default_is_a_value(self) -> Reading:
        if self.default not in self.values:
            raise ValueError(f"default {self.default!r} is not one of the values {sorted(self.values)}")
        return self

    @property
    def shared(self) -> bool:
        return self.patches is not None


class SharedReadings(StrictModel):
    """``reproduce/readings.yaml``: the readings every run of every paper rests on."""

    readings: dict[str, Reading]

    @model_validator(mode="after")
    def _each_value_patches_the_settings(self) -> SharedReadings:
        for name, reading in self.readings.items():
            if not re.match(ID_PATTERN, name) or not is_shared_reading(name):
                raise ValueError(f"reading {name!r}: expected an undotted id (lower-case letters, digits, '+', '-')")
            if reading.patches is None or set(reading.patches) != set(reading.values):
                found = ", ".join(reading.patches or {}) or "none"
                raise ValueError(
                    f"readings.{name}.patches: expected the settings of each value ({', '.join(reading.values)}), "
                    f"found {found}"
                )
            # Its runs are hashed by the settings it sets (dml_core.recipes.settings), so two values must set
            # different ones.
            patches = [sorted(patch.items()) for patch in reading.patches.values()]
            if any(patches.count(patch) > 1 for patch in patches):
                raise ValueError(f"readings.{name}.patches: two values set the same settings")
        return self


class PaperDefault(StrictModel):
    """A paper's own default of a shared reading, and why."""

    default: str
    why: str


class PaperAssumptions(StrictModel):
    paper: str
    assumptions: dict[str, str] = Field(default_factory=dict)  # id -> text
    readings: dict[str, Reading] = Field(default_factory=dict)  # name -> reading
    shared_readings: dict[str, PaperDefault] = Field(default_factory=dict)  # shared reading -> this paper's default

    @model_validator(mode="after")
    def _names_are_ids(self) -> PaperAssumptions:
        for name in [*self.assumptions, *self.readings]:
            if not re.match(ID_PATTERN, name):
                raise ValueError(f"id {name!r}: expected lower-case letters, digits, '.', '+' and '-'")
        for name, reading in self.readings.items():
            if not name.startswith(f"{self.paper}."):
                raise ValueError(
                    f"reading {name!r}: expected a name that starts with the paper key, '{self.paper}.' (undotted "
                    f"names are the shared readings', reproduce/{SHARED_READINGS_FILE})"
                )
            if reading.shared:
                raise ValueError(f"readings.{name}.patches: a paper's reading says what it changes in its recipe files")
        return self

    def with_shared(self, shared: SharedReadings, origin: str) -> PaperAssumptions:
        """These readings and the shared ones, each shared one at this paper's default where it names one."""
        for name, own in self.shared_readings.items():
            if name not in shared.readings:
                raise InputError(
                    f"{origin}: field shared_readings: expected a reading of {SHARED_READINGS_FILE} "
                    f"({', '.join(shared.readings)}), found {name!r}"
                )
            if own.default not in shared.readings[name].values:
                raise InputError(
                    f"{origin}: field shared_readings.{name}.default: expected one of "
                    f"{', '.join(shared.readings[name].values)}, found {own.default!r}"
                )
        merged = {
            name: reading.model_copy(update=self.shared_readings[name].model_dump())
            if name in self.shared_readings
            else reading
            for name, reading in shared.readings.items()
        }
        return self.model_copy(update={"readings": {**merged, **self.readings}})

    def text(self, assumption_id: str, origin: str) -> str:
        """The text of an assumption, or an error naming ``origin`` and the known ids."""
        if assumption_id not in self.assumptions:
            raise InputError(
                f"{origin}: field assumptions: unknown assumption {assumption_id!r}; known in "
                f"reproduce/{self.paper}/{ASSUMPTIONS_FILE}: {', '.join(sorted(self.assumptions))}"
            )
        return self.assumptions[assumption_id]


def load_paper_assumptions(folder: Path) -> PaperAssumptions | None:
    """``<folder>/assumptions.yaml`` with the shared readings of ``<folder>/../readings.yaml`` (where there is
    one); None where there is no assumptions.yaml (a folder of one's own recipes: their assumptions are sentences
    and they have no readings)."""
    path = Path(folder) / ASSUMPTIONS_FILE
    if not path.is_file():
        return None
    loaded = load_yaml_model(path, PaperAssumptions, what="assumptions file")
    if loaded.paper != Path(folder).name:
        raise InputError(f"{path}: field paper: expected {Path(folder).name!r} (its folder), found {loaded.paper!r}")
    shared_path = Path(folder).parent / SHARED_READINGS_FILE
    if not shared_path.is_file():
        if loaded.shared_readings:
            raise InputError(f"{path}: field shared_readings: {shared_path} not found")
        return loaded
    return loaded.with_shared(load_yaml_model(shared_path, SharedReadings, what="shared readings file"), str(path))
