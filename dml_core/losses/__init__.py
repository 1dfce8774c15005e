"""Deep-metric-learning losses, one module per family, on one base.

Every loss is a ``MetricLoss`` (``base``) that declares its name in its own module; find one by name in ``LOSSES``
or build it from a recipe's name and parameters with ``build_loss(name, **params)`` (``registry``, which finds every
module's losses). A loss's learnable state (proxies, a learned margin ``beta``) is registered on it, so
``loss.parameters()`` yields exactly that and can get its own learning rate (docs/training.md, "Losses").

It imports only the top-level helpers; training, the runner's component check and the GPU check import it.
"""

from dml_core.losses.base import CompositeLoss, MetricLoss
from dml_core.losses.registry import LOSSES, build_loss, loss_parameters, with_run_values

__all__ = ["LOSSES", "CompositeLoss", "MetricLoss", "build_loss", "loss_parameters", "with_run_values"]
