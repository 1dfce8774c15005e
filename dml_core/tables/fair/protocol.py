"""The protocol the fair table's runs actually followed, read from their results files (never restated from the
recipes): backbone and start, frozen BN, embedding size, preprocessing, optimiser and schedule, images per step,
steps, selection rule and validation split. Where the runs of one dataset disagree on a field, the table says so
and names which methods have which value: a comparison across protocols is not the fair one.
"""

from __future__ import annotations

import functools
import json
from collections.abc import Callable, Mapping, Sequence
from typing import Any

import numpy as np

from dml_core.errors import InputError
from dml_core.recipes.study import PAPER_POINT, SEARCH_READING
from dml_core.results import ResultsFile
from dml_core.tables.pages.mini import backbone_label

# A label set large enough for any sampler's parameters (P classes x K images, a shuffled pool): images per step
# is then what the sampler's batch holds, whatever the data set.
_SYNTHETIC_CLASSES, _SYNTHETIC_IMAGES = 1000, 100


def images_per_step(sampler: Mapping[str, Any]) -> int:
    """The images one training step takes under a recipe's ``sampler`` (name, params): every stream of the batch
    (damlrrm's neat and shuffled streams, cgml's two draws), as the sampler itself builds it.

    >>> images_per_step({"name": "pk", "params": {"classes_per_batch": 16, "images_per_class": 5}})
    80
    >>> images_per_step({"name": "two_stream", "params": {"classes_per_batch": 30, "images_per_class": 2}})
    120
    """
    # Built once per distinct sampler: a page reads the same few samplers from dozens of results files, and each
    # build lays the sampler over all the synthetic labels.
    return _images_per_step(json.dumps(dict(sampler), sort_keys=True))


@functools.cache
def _images_per_step(sampler_json: str) -> int:
    from dml_core.data.samplers import SAMPLERS  # here: the data package loads torch, the page does not need it

    sampler = json.loads(sampler_json)
    labels = np.repeat(np.arange(_SYNTHETIC_CLASSES), _SYNTHETIC_IMAGES)
    name = sampler.get("name")
    try:
        built = SAMPLERS.lookup(str(name))(labels, seed=0, **sampler.get("params", {}))
    except (TypeError, InputError) as error:
        raise InputError(f"sampler {name!r} with {sampler.get('params')}: cannot build it ({error})") from None
    return int(sum(built.group_sizes))


def _content(results: ResultsFile, *path: str) -> Any:
    tree: Any = results.recipe.content
    for key in path:
        tree = tree.get(key, {}) if isinstance(tree, dict) else {}
    return tree


def _backbone(results: ResultsFile) -> str:
    return f"{backbone_label(results.backbone, results.backbone_width)}, weights {results.weights.get('requested')}"


def _preprocessing(results: ResultsFile) -> str:
    t = _content(results, "data", "transforms")
    crop = t.get("crop_size") or "the backbone's input"
    flip = ", flip" if t.get("hflip") else ""
    return f"resize {t.get('resize_mode')} {t.get('resize')}, {t.get('train_crop')} {crop}{flip}"


def _optimiser(results: ResultsFile) -> str:
    o, s = _content(results, "optimizer"), _content(results, "schedule")
    schedule = s.get("name", "constant")
    if s.get("milestones"):
        schedule += f" at {s['milestones']} {s.get('unit', 'iteration')}s x{s.get('gamma')}"
    elif s.get("step_size"):
        schedule += f" every {s['step_size']} {s.get('unit', 'iteration')}s x{s.get('gamma')}"
    extra = f", new layers x{o['new_layer_lr_multiplier']:g}" if o.get("new_layer_lr_multiplier", 1) != 1 else ""
    return f"{o.get('name')} lr {o.get('lr'):g}, weight decay {o.get('weight_decay', 0):g}{extra}, schedule {schedule}"


def _validation(results: ResultsFile) -> str:
    """The split as the evaluation protocol recorded it (``validation_split``: its class count and the hash of the
    held-out classes, so two runs holding out other classes differ here), else as the recipe set it."""
    split = results.evaluation_protocol.get("validation_split") or _content(results, "data", "validation")
    if not split:
        return "none"
    text = f"fraction {split.get('fraction')}, seed {split.get('seed')}"
    if "classes" in split:
        text += f", {split['classes']} classes held out (sha256 {str(split.get('classes_sha256'))[:12]})"
    return text


def _hyper_parameters(results: ResultsFile) -> str:
    """Whose loss hyper-parameters the run trained with: its paper's (which the papers chose with feedback from
    their test classes), or a point of the validation search."""
    point = (results.recipe.content.get("readings") or {}).get(SEARCH_READING, PAPER_POINT)
    if point == PAPER_POINT:
        return "each method's paper's, which the papers chose on their test classes"
    return f"{SEARCH_READING} {point}"


FIELDS: dict[str, Callable[[ResultsFile], str]] = {
    "backbone": _backbone,
    "frozen BN": lambda r: "yes" if _content(r, "model").get("frozen_bn") else "no",
    "embedding": lambda r: str(_content(r, "model").get("embedding_dim")),
    "preprocessing": _preprocessing,
    "optimiser": _optimiser,
    "images per step": lambda r: str(images_per_step(_content(r, "sampler"))),
    "steps": lambda r: str(r.timing.iterations),
    "selection": lambda r: r.selection.rule,
    "validation split": _validation,
    "loss hyper-parameters": _hyper_parameters,
}


def protocol_values(runs: Sequence[tuple[str, ResultsFile]]) -> dict[str, dict[str, list[str]]]:
    """Per field, each value found and the methods (``(method, results)`` pairs) that ran with it."""
    found: dict[str, dict[str, list[str]]] = {}
    for field, read in FIELDS.items():
        values: dict[str, list[str]] = {}
        for method, results in runs:
            methods = values.setdefault(read(results), [])
            if method not in methods:
                methods.append(method)
        found[field] = values
    return found


def protocol_lines(runs: Sequence[tuple[str, ResultsFile]]) -> tuple[str, list[str]]:
    """The protocol as one sentence of the fields all runs share, and a line per field on which they differ.

    A field the runs agree on reads ``field: value``; one they do not, ``field differs: a (m1, m2); b (m3)``."""
    shared, differing = [], []
    for field, values in protocol_values(runs).items():
        if len(values) == 1:
            shared.append(f"{field}: {next(iter(values))}")
        else:
            listed = "; ".join(f"{value} ({', '.join(methods)})" for value, methods in values.items())
            differing.append(f"{field} differs: {listed}")
    return "; ".join(shared), differing
