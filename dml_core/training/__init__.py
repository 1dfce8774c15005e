"""The shared training and evaluation loop every recipe calls: ``train(recipe, out_dir, ...)``."""

from dml_core.training.trainer import train

__all__ = ["train"]
