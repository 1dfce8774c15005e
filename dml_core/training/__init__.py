"""The shared training and evaluation loop every recipe calls: ``train(recipe, out_dir, ...)``.

It may import ``pipeline``, ``models``, ``data``, ``recipes``, ``losses``, ``evaluation`` and the top-level helpers,
never ``tables``; the runner, the commands and the GPU check import it.
"""

from dml_core.training.trainer import train

__all__ = ["train"]
