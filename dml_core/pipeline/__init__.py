"""The data pipeline: how a recipe's images become the batches the trainer steps on.

``build_batch_source`` is its one entry point, called by the trainer's setup: ``choice`` reads ``data.pipeline``
and the source is the PIL path (``LoaderBatches``: decoding and augmentation in DataLoader workers) or the cache
(``CachedBatches``: the decoded uint8 ``image_cache`` on the device, augmented there by ``batch_augment``).
``seeded_batches`` makes the batch order and each image's augmentation functions of the seed, ``loaders`` gives the
DataLoaders whose workers live for the run, and ``cache_preparation`` builds the caches a paper's runs need before
they train.

It may import ``data`` (images, indexes, transforms), ``recipes.settings`` and the top-level helpers; ``training``,
``runner``, ``commands`` and ``gpu_check`` import it, never the reverse.
"""

from dml_core.pipeline.batch_source import build_batch_source

__all__ = ["build_batch_source"]
