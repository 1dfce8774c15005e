"""Datasets, their verified DML splits, image loading, transforms and batch samplers.

Where to look: ``registry.DATASETS`` (names, counts, sources), ``prepare.prepare`` (``dml prepare``),
``loading.load_split``, ``images.ImageDataset``, ``transforms.build_transform``, ``samplers.SAMPLERS``.
The canonical index is ``<root>/<dataset>/dml_index.csv`` (``index.INDEX_FILENAME``). Preparing, loading and
caching take the dataset's ``DatasetSpec``: its name is looked up once, where a command or a run starts.

It may import ``recipes`` (the settings it reads) and the top-level helpers; ``models``, ``pipeline`` and the parts
above them import it.
"""

from dml_core.data.images import ImageDataset, load_image
from dml_core.data.index import INDEX_FILENAME, SplitIndex
from dml_core.data.loading import load_split
from dml_core.data.prepare import prepare
from dml_core.data.registry import DATASETS, DatasetSpec, SplitCounts
from dml_core.data.samplers import (
    SAMPLERS,
    PairedClassSampler,
    PKSampler,
    RandomBatchSampler,
    TwoStreamSampler,
)
from dml_core.data.transforms import build_transform

__all__ = [
    "DATASETS",
    "INDEX_FILENAME",
    "SAMPLERS",
    "DatasetSpec",
    "ImageDataset",
    "PKSampler",
    "PairedClassSampler",
    "RandomBatchSampler",
    "SplitCounts",
    "SplitIndex",
    "TwoStreamSampler",
    "build_transform",
    "load_image",
    "load_split",
    "prepare",
]
