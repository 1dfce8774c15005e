"""Recipe files: a base extended and overridden, runs declared one by one or as grids, readings as patches.

A file may hold ``extends``, settings (nested or as dotted paths), ``assumptions``, ``readings``, ``runs`` and
``targets``; docs/recipes.md gives each key and the order in which the layers apply. Each value keeps the file it
came from, so a refused setting names its file.
"""

from __future__ import annotations

import copy
import itertools
import string
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import yaml
from pydantic import ValidationError

from dml_core.command_line import DML
from dml_core.errors import InputError
from dml_core.recipes.assumptions import SHARED_READINGS_FILE, PaperAssumptions
from dml_core.recipes.settings import Recipe, Target
from dml_core.recipes.settings_tree import dotted, expand_dotted, merge, origin_of
from dml_core.schema import SAFE_LOADER, describe_problem, read_yaml_mapping

FILE_KEYS = frozenset({"extends", "runs", "targets"})
ENTRY_KEYS = frozenset({"id", "targets", "grid"})
ACCUMULATED_KEYS = frozenset({"assumptions", "readings"})
# A layer that switches a component to another one drops the parameters of the one it replaces (they would not fit).
COMPONENT_PARAMETERS = {
    ("loss", "name"): (("loss", "params"),),
    ("loss", "params", "base"): (("loss", "params", "base_params"),),
    ("sampler", "name"): (("sampler", "params"), ("smoke", "sampler_params"), ("mini", "sampler_params")),
    ("model", "head", "name"): (("model", "head", "params"),),
}
# Settings of which a recipe gives one or the other: setting one (a later layer, ``--set``) clears the other.
EXCLUSIVE_SETTINGS = (
    (("training", "iterations"), ("training", "epochs")),
    (("mini", "iterations"), ("mini", "epochs")),
)

Patch = tuple[dict[str, Any], str]  # settings and where they were written


@dataclass
class Layered:
    """Settings built up layer by layer, with the origin of every leaf, the assumption ids and reading patches."""

    tree: dict[str, Any] = field(default_factory=dict)
    origins: dict[tuple[str, ...], str] = field(default_factory=dict)
    assumptions: list[str] = field(default_factory=list)
    readings: dict[str, dict[str, list[Patch]]] = field(default_factory=dict)  # name -> value -> patches, in order
    reading_origins: dict[str, str] = field(default_factory=dict)  # where each reading was first declared
    # a recipe outside a paper folder: the texts of its assumptions by id, and readings already applied (name -> value)
    assumption_texts: dict[str, str] = field(default_factory=dict)
    applied_readings: dict[str, str] = field(default_factory=dict)

    def copy(self) -> Layered:
        return copy.deepcopy(self)

    def add(self, layer: Mapping[str, Any], origin: str, reserved: frozenset[str] = frozenset()) -> None:
        """Merge one layer: its settings, its assumption ids and its reading patches."""
        if not isinstance(layer, Mapping):
            raise InputError(f"{origin}: expected a mapping of settings, found {type(layer).__name__}")
        settings = expand_dotted(
            {k: v for k, v in layer.items() if k not in reserved and k not in ACCUMULATED_KEYS}, origin
        )
        self._drop_replaced_parameters(settings)
        drop_excluded_settings(self.tree, settings, self.origins)
        merge(self.tree, settings, origin, self.origins)
        ids = layer.get("assumptions", [])
        if isinstance(ids, Mapping) and all(isinstance(i, str) and isinstance(t, str) for i, t in ids.items()):
            self.assumption_texts.update(ids)
            ids = list(ids)
        if not isinstance(ids, list) or not all(isinstance(i, str) for i in ids):
            raise InputError(
                f"{origin}: field assumptions: expected a list of assumption ids (outside a paper folder, sentences "
                f"or {{id: sentence}}), found {ids!r}"
            )
        self.assumptions += [i for i in ids if i not in self.assumptions]
        readings = layer.get("readings", {})
        if not isinstance(readings, Mapping):
            raise InputError(f"{origin}: field readings: expected {{name: {{value: settings}}}}, found {readings!r}")
        for name, patches in readings.items():
            if isinstance(patches, str):  # a reading already applied to the settings (what `dml recipes show` prints)
                self.applied_readings[name] = patches
                self.reading_origins.setdefault(name, origin)
                continue
            if not isinstance(patches, Mapping) or not all(isinstance(p, Mapping) for p in patches.values()):
                raise InputError(f"{origin}: field readings.{name}: expected {{value: settings}}, found {patches!r}")
            values = {str(value): patch for value, patch in patches.items()}
            earlier = self.readings.setdefault(name, {value: [] for value in values})
            if set(values) != set(earlier):
                raise InputError(
                    f"{origin}: field readings.{name}: expected the values of its declaration in "
                    f"{self.reading_origins[name]} ({', '.join(earlier)}), found {', '.join(values)}"
                )
            self.reading_origins.setdefault(name, origin)
            for value, patch in values.items():
                earlier[value].append((dict(patch), f"{origin}: readings.{name}.{value}"))

    def _drop_replaced_parameters(self, settings: Mapping[str, Any]) -> None:
        for name_path, parameter_paths in COMPONENT_PARAMETERS.items():
            new, old = _get(settings, name_path), _get(self.tree, name_path)
            if new is None or old is None or new == old:
                continue
            for path in parameter_paths:
                parent = _get(self.tree, path[:-1])
                if isinstance(parent, dict):
                    parent.pop(path[-1], None)
                for stale in [p for p in self.origins if p[: len(path)] == path]:
                    del self.origins[stale]


def drop_excluded_settings(tree: dict[str, Any], layer: Mapping[str, Any], origins: dict) -> None:
    """Where ``layer`` (nested) sets one of ``EXCLUSIVE_SETTINGS`` and not the other, drop the other from ``tree``:
    ``--set mini.epochs=8`` over a recipe counted in iterations counts it in epochs. A layer that sets both keeps
    both (the recipe's validation then names the conflict).

    >>> tree = {"training": {"iterations": 100, "eval_every": 50}}
    >>> drop_excluded_settings(tree, {"training": {"epochs": 8}}, {})
    >>> tree
    {'training': {'eval_every': 50}}
    """
    for pair in EXCLUSIVE_SETTINGS:
        for given, other in (pair, pair[::-1]):
            if _get(layer, given) is None or _has(layer, other):
                continue
            parent = _get(tree, other[:-1])
            if isinstance(parent, dict):
                parent.pop(other[-1], None)
            origins.pop(other, None)


def _has(tree: Mapping[str, Any], path: tuple[str, ...]) -> bool:
    parent = _get(tree, path[:-1])
    return isinstance(parent, Mapping) and path[-1] in parent


def _get(tree: Mapping[str, Any], path: tuple[str, ...]) -> Any:
    for key in path:
        if not isinstance(tree, Mapping) or key not in tree:
            return None
        tree = tree[key]
    return tree


@dataclass(frozen=True)
class RunDefinition:
    """One run a recipe file declares, expanded but for the choice of readings (``recipe`` makes the Recipe).

    ``paper_assumptions`` is None for a recipe file outside a paper folder: its assumptions are sentences and
    it has no readings."""

    id: str
    file: Path
    settings: Layered
    targets: tuple[str | Mapping, ...]  # "table/row" (or {table, row})
    paper_assumptions: PaperAssumptions | None

    @property
    def paper(self) -> str | None:
        return self.paper_assumptions.paper if self.paper_assumptions else self.settings.tree.get("paper")

    @property
    def reading_names(self) -> list[str]:
        return list(self.settings.readings)

    def default_reading(self, name: str) -> str:
        return self.paper_assumptions.readings[name].default

    def recipe(self, choices: Mapping[str, str] | None = None, overrides: Sequence[str] = ()) -> Recipe:
        """The run as a validated ``Recipe`` under ``choices`` (reading -> value; others at their default) and
        ``--set`` style ``overrides`` (applied last)."""
        layered = self.settings.copy()
        chosen = {}
        for name, patches in list(layered.readings.items()):
            value = (choices or {}).get(name, self.default_reading(name))
            for patch, origin in patches[value]:  # every declaration's patch, base first
                layered.add(patch, origin)
            chosen[name] = value
        for override in overrides:
            _merge_override(layered.tree, override, layered.origins)
        tree = layered.tree
        declared = tree.get("paper")
        if self.paper_assumptions and declared not in (None, self.paper):
            origin = origin_of(("paper",), layered.origins)
            raise InputError(f"{origin}: field paper: expected {self.paper!r} (its folder), found {declared!r}")
        tree.update(
            id=self.id,
            paper=self.paper,
            targets=[_target(text, str(self.file)) for text in self.targets],
            assumptions=self._assumption_texts(layered.assumptions),
            readings={**layered.applied_readings, **chosen},
            # a file of readings already applied (``dml recipes show``) keeps the variant it was shown under
            variant=tree.get("variant", "")
            if layered.applied_readings
            else variant_name({n: v for n, v in chosen.items() if v != self.default_reading(n)}),
        )
        try:
            return Recipe.model_validate(tree)
        except ValidationError as error:
            raise InputError(_problems(error, self.id, self.file, layered.origins)) from None

    def _assumption_texts(self, ids: list[str]) -> dict[str, str] | list[str]:
        if self.paper_assumptions is None:  # sentences (numbered by the schema), or sentences by id
            return {i: self.settings.assumption_texts[i] for i in ids} if self.settings.assumption_texts else ids
        return {i: self.paper_assumptions.text(i, str(self.file)) for i in ids}


def with_overrides(recipe: Recipe, overrides: Sequence[str]) -> Recipe:
    """``recipe`` with ``--set`` style overrides applied on top (after a smoke shrink, so they are kept)."""
    if not overrides:
        return recipe
    tree = recipe.model_dump(mode="python")
    for override in overrides:
        _merge_override(tree, override, {})
    try:
        return Recipe.model_validate(tree)
    except ValidationError as error:
        raise InputError(_problems(error, recipe.id, Path("--set"), {})) from None


def parse_override(override: str, origin: str = "--set") -> dict[str, Any]:
    """``key.path=value`` as a one-leaf settings layer (the value parsed as YAML: 3 -> int, [1, 2] -> list).

    >>> parse_override("loss.params.alpha=26")
    {'loss.params.alpha': 26}
    """
    if "=" not in override:
        raise InputError(f"{origin}: expected key.path=value, found {override!r}")
    key, raw = override.split("=", 1)
    try:
        value = yaml.load(raw, Loader=SAFE_LOADER)
    except yaml.YAMLError as error:
        raise InputError(f"{origin}: {key.strip()}: the value is not valid YAML ({error})") from None
    return {key.strip(): value}


def _merge_override(tree: dict[str, Any], override: str, origins: dict) -> None:
    layer = expand_dotted(parse_override(override), "--set")
    drop_excluded_settings(tree, layer, origins)
    merge(tree, layer, "--set", origins)


def split_tier_overrides(overrides: Sequence[str]) -> tuple[list[str], list[str]]:
    """(the ``smoke.*`` and ``mini.*`` overrides, the others): the first shape how a tier shrinks the recipe, so
    they apply before the shrink; the others after it, so that it keeps them.

    >>> split_tier_overrides(["mini.start=glyph-pretrained", "training.seed=1", "smoke.iterations=2"])
    (['mini.start=glyph-pretrained', 'smoke.iterations=2'], ['training.seed=1'])
    """
    tier = [override for override in overrides if override.split("=", 1)[0].split(".", 1)[0] in ("smoke", "mini")]
    return tier, [override for override in overrides if override not in tier]


def variant_name(non_default: Mapping[str, str]) -> str:
    """How a run under non-default readings is named after its id ("" for the defaults).

    >>> variant_name({"damlrrm.lr": "1e-3", "cgml.graphs": "halves"})
    'cgml.graphs=halves~damlrrm.lr=1e-3'
    """
    return "~".join(f"{name}={value}" for name, value in sorted(non_default.items()))


def _problems(error: ValidationError, run_id: str, file: Path, origins: Mapping) -> str:
    lines = []
    for item in error.errors():
        path = tuple(str(part) for part in item["loc"])
        where = origin_of(path, origins) or str(file)
        lines.append(f"{where}: run {run_id}: field {dotted(path) or '(top level)'}: {describe_problem(item)}")
    return "; ".join(lines)


def _target(target: str | Mapping, origin: str) -> Target:
    """``"table/row"`` (or ``{table: ..., row: ...}``) as a ``Target``."""
    if isinstance(target, Mapping) and set(target) == {"table", "row"}:
        return Target(table=str(target["table"]), row=str(target["row"]))
    if not isinstance(target, str) or target.count("/") != 1:
        raise InputError(f"{origin}: field targets: expected 'table/row', found {target!r}")
    table, row = target.split("/")
    return Target(table=table, row=row)


def _template_fields(template: str) -> set[str]:
    return {name for _, name, _, _ in string.Formatter().parse(template) if name is not None}


def _format(template: str, labels: Mapping[str, str], origin: str, what: str) -> str:
    unknown = _template_fields(template) - set(labels)
    if unknown:
        raise InputError(
            f"{origin}: field {what}: {{{', '.join(sorted(unknown))}}} is not a grid axis "
            f"(axes: {', '.join(a for a in labels if a != 'id') or 'none'})"
        )
    return template.format(**labels)


def extends_chain(path: Path) -> list[tuple[Path, dict]]:
    """The file and the files it extends, base first, each with its YAML mapping."""
    chain: list[tuple[Path, dict]] = []
    current: Path | None = Path(path)
    while current is not None:
        if any(current.resolve() == seen.resolve() for seen, _ in chain):
            raise InputError(f"{current}: field extends: a cycle ({' -> '.join(str(p) for p, _ in chain)})")
        tree = read_yaml_mapping(current, "recipe file")
        refuse_yaml_anchors(current)
        chain.append((current, tree))
        parent = tree.get("extends")
        if parent is not None and not isinstance(parent, str):
            raise InputError(f"{current}: field extends: expected a file name, found {parent!r}")
        current = current.parent / parent if parent else None
        if current is not None and not current.is_file():
            raise InputError(f"{chain[-1][0]}: field extends: {current} not found")
    return chain[::-1]


def refuse_yaml_anchors(path: Path) -> None:
    """Settings are shared by ``extends`` and grids only: a YAML anchor (``&name``), alias (``*name``) or merge key
    (``<<:``) is an ``InputError`` naming the file and line (they would share settings that no layer records)."""
    for event in yaml.parse(Path(path).read_text(encoding="utf-8"), Loader=SAFE_LOADER):
        if isinstance(event, yaml.AliasEvent):
            found = f"the alias *{event.anchor}"
        elif getattr(event, "anchor", None):
            found = f"the anchor &{event.anchor}"
        elif isinstance(event, yaml.ScalarEvent) and event.value == "<<" and not event.style:  # plain: None or ""
            found = "the merge key <<"
        else:
            continue
        raise InputError(
            f"{path}: line {event.start_mark.line + 1}: expected no YAML anchors in a recipe file, found {found}; "
            "share settings with extends (a file of settings that others extend) or a grid"
        )


def expand_file(path: Path, paper_assumptions: PaperAssumptions | None) -> list[RunDefinition]:
    """Every run ``path`` declares (none for a base file), in declaration order."""
    chain = extends_chain(path)
    base = Layered()
    for name, reading in (paper_assumptions.readings if paper_assumptions else {}).items():
        if reading.shared:  # every run rests on it, its patches first (a recipe file may add to them)
            base.add({"readings": {name: reading.patches}}, SHARED_READINGS_FILE)
    for file, tree in chain:
        base.add(tree, str(file), reserved=FILE_KEYS)
    top = chain[-1][1]
    entries = top.get("runs")
    extra_targets = top.get("targets", {})
    if entries is None:  # one recipe (its id and targets at the top level), or a base file for others
        entries = [{"id": str(base.tree["id"]), "targets": top.get("targets", [])}] if "id" in base.tree else []
        extra_targets = {}
    if not isinstance(entries, list):
        raise InputError(f"{path}: field runs: expected a list of run entries, found {type(entries).__name__}")
    if not isinstance(extra_targets, Mapping):
        raise InputError(f"{path}: field targets: expected {{run id: ['table/row', ...]}}, found {extra_targets!r}")
    runs: list[RunDefinition] = []
    for number, entry in enumerate(entries):
        runs += _expand_entry(path, number, entry, base, extra_targets, paper_assumptions)
    ids = [run.id for run in runs]
    unknown = sorted(set(extra_targets) - set(ids))
    if unknown:
        raise InputError(f"{path}: field targets: {', '.join(unknown)} is not a run of this file")
    for run in runs:
        _check_readings(run, paper_assumptions)
    return runs


def _expand_entry(
    path: Path,
    number: int,
    entry: Any,
    base: Layered,
    extra_targets: Mapping,
    paper_assumptions: PaperAssumptions | None,
) -> list[RunDefinition]:
    origin = f"{path}: runs[{number}]"
    if not isinstance(entry, Mapping) or not isinstance(entry.get("id"), str):
        raise InputError(f"{origin}: expected a mapping with an id, found {entry!r}")
    grid = entry.get("grid", {})
    if not isinstance(grid, Mapping) or not all(isinstance(v, Mapping) and v for v in grid.values()):
        raise InputError(f"{origin}: field grid: expected {{axis: {{label: settings}}}}, found {grid!r}")
    targets = entry.get("targets", [])
    if not isinstance(targets, list):
        raise InputError(f"{origin}: field targets: expected a list of 'table/row', found {targets!r}")
    runs = []
    for combination in itertools.product(*(list(values.items()) for values in grid.values())):
        labels = {axis: str(label) for axis, (label, _) in zip(grid, combination, strict=True)}
        layered = base.copy()
        layered.add(entry, origin, reserved=ENTRY_KEYS)
        for axis, (label, settings) in zip(grid, combination, strict=True):
            layered.add(settings, f"{origin}.grid.{axis}.{label}")
        run_id = _format(entry["id"], labels, origin, "id")
        if "description" in layered.tree and grid:
            layered.tree["description"] = _format(str(layered.tree["description"]), labels, origin, "description")
        run_targets = [
            t if isinstance(t, Mapping) else _format(t, {**labels, "id": run_id}, origin, "targets") for t in targets
        ]
        run_targets += [t for t in extra_targets.get(run_id, []) if t not in run_targets]
        runs.append(RunDefinition(run_id, path, layered, tuple(run_targets), paper_assumptions))
    return runs


def _check_readings(run: RunDefinition, paper_assumptions: PaperAssumptions | None) -> None:
    defined = paper_assumptions.readings if paper_assumptions else {}
    applied = run.settings.applied_readings
    if paper_assumptions and (applied or run.settings.assumption_texts):
        field_name, found = ("readings", applied) if applied else ("assumptions", run.settings.assumption_texts)
        raise InputError(
            f"{run.file}: field {field_name}: expected {'{name: {value: settings}}' if applied else 'a list of ids'} "
            f"in a paper folder (its assumptions.yaml defines them), found {dict(found)!r}; a recipe as "
            f"`{DML} recipes show` prints it stands outside the paper folders"
        )
    both = sorted(set(applied) & set(run.settings.readings))
    if both:
        name = both[0]
        raise InputError(
            f"{run.settings.reading_origins[name]}: field readings.{name}: expected either the value applied "
            f"({applied[name]!r}) or {{value: settings}}, found both"
        )
    for name, patches in run.settings.readings.items():
        origin = run.settings.reading_origins[name]
        if name not in defined:
            known = ", ".join(sorted(defined)) or "none (readings are declared in a paper's assumptions.yaml)"
            raise InputError(f"{origin}: field readings: unknown reading {name!r}; readings of {run.paper}: {known}")
        if set(patches) != set(defined[name].values):
            raise InputError(
                f"{origin}: field readings.{name}: expected a patch for each value "
                f"({', '.join(defined[name].values)}), found {', '.join(patches)}"
            )
