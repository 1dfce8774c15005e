"""Batch samplers: iterables of batches (lists of dataset positions), deterministic for (seed, epoch).

Every sampler has ``seed``, ``set_epoch(epoch)``, ``__len__`` (batches per epoch, known before iterating)
and ``group_sizes`` (how a batch splits into consecutive streams, e.g. ``(60, 60)`` for neat + shuffled).
Pass one as ``batch_sampler=`` to a ``torch.utils.data.DataLoader``.

A real epoch: each sampler's primary stream visits every training image (of the classes it uses) exactly once
per epoch, in batches of equal size; ``class_chunks`` states how class-structured batches are cut and filled.
"""

from __future__ import annotations

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
]

SAMPLERS: Registry[type[EpochBatchSampler]] = Registry(
    "sampler",
    "sampler.name",
    {
        "random": RandomBatchSampler,
        "pk": PKSampler,
        "two_stream": TwoStreamSampler,
        "paired": PairedClassSampler,
    },
)
