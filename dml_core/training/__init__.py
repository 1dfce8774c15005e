"""The shared training and evaluation loop every run goes through: ``train(RunToTrain(plan, ...))``
(``run_description``: a planned run and where and how it trains).

It may import ``pipeline``, ``models``, ``data``, ``recipes``, ``losses``, ``evaluation`` and the top-level helpers,
never ``tables``; the runner, the commands and the GPU check import it.
"""

from dml_core.training.trainer import train

__all__ = ["train"]
