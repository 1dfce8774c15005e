"""Batch samplers: iterables of batches (lists of dataset positions), deterministic for (seed, epoch).

Every sampler has ``seed``, ``set_epoch(epoch)``, ``__len__`` (batches per epoch, known before iterating)
and ``group_sizes`` (how a batch splits into consecutive streams, e.g. ``(60, 60)`` for neat + shuffled).
Pass one as ``batch_sampler=`` to a ``torch.utils.data.DataLoader``.

A real epoch: each sampler's primary stream visits every training image (of the classes it uses) exactly once
per epoch, in batches of equal size; ``class_chunks`` states how class-structured batches are cut and filled.
"""

from __future__ import annotations

import inspect
from collections.abc import Mapping
from typing import Any

from dml_core.data.class_chunks import number_of_batches
from dml_core.data.class_samplers import EpochBatchSampler, PKSampler, RandomBatchSampler
from dml_core.data.stream_samplers import PairedClassSampler, TwoStreamSampler
from dml_core.registry import Registry

__all__ = [
    "SAMPLERS",
    "EpochBatchSampler",
    "PKSampler",
    "PairedClassSampler",
    "RandomBatchSampler",
    "TwoStreamSampler",
    "number_of_batches",
    "sampler_record",
]


def declared_samplers(base: type[EpochBatchSampler] = EpochBatchSampler) -> list[type[EpochBatchSampler]]:
    """Every subclass of ``base`` that declares its own ``name``, in the order they were defined: the samplers of
    ``class_samplers`` and ``stream_samplers``, imported above (a sampler's name is written once, on its class)."""
    found = []
    for cls in base.__subclasses__():
        found += ([cls] if "name" in vars(cls) else []) + declared_samplers(cls)
    return found


SAMPLERS: Registry[type[EpochBatchSampler]] = Registry(
    "sampler", "sampler.name", {cls.name: cls for cls in declared_samplers()}
)


def sampler_record(name: str, params: Mapping[str, Any], sampler: EpochBatchSampler) -> dict[str, Any]:
    """What decides the batches of ``sampler`` (built as ``SAMPLERS[name](labels, seed=..., **params)``) beside the
    training labels, for its run's results file: its name, its seed, every parameter of its constructor with the
    defaults filled in (a default that changes later cannot pass for the one a run used), and what it derived
    from them and the labels (``derived_settings``: damlrrm's shuffled pool).

    >>> import numpy as np
    >>> labels = np.repeat(np.arange(6), 4)
    >>> record = sampler_record("two_stream", {"classes_per_batch": 2, "images_per_class": 2},
    ...                         TwoStreamSampler(labels, 2, 2, seed=3))
    >>> record["seed"], record["settings"]["shuffled_pool_size"], record["settings"]["reshuffle_pool"]
    (3, None, False)
    >>> record["derived"]
    {'pool_images': 12, 'pool_batches': 3, 'neat_batches': 6}
    """
    bound = inspect.signature(SAMPLERS.lookup(name)).bind_partial(**params)
    bound.apply_defaults()
    settings = {key: value for key, value in bound.arguments.items() if key not in ("labels", "seed")}
    return {"name": name, "seed": sampler.seed, "settings": settings, "derived": sampler.derived_settings()}
