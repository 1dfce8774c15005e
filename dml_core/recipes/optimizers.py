"""The optimisers a recipe may name (``optimizer.name``), each declared once, here: the class of ``torch.optim``
that implements it and the state it keeps. Free of torch: the schema takes the names (``OptimizerName``), training's
registry the classes (``training.optim.OPTIMIZERS``), the runner's disk estimate the state (``state_slots``).

>>> [state_slots(name, momentum) for name in ("sgd", "rmsprop") for momentum in (0.0, 0.9)]
[0, 1, 1, 2]
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal


@dataclass(frozen=True)
class OptimizerKind:
    """How one optimiser is built and what it keeps."""

    torch_class: str  # its class in torch.optim
    state_slots: int  # fp32 state tensors per trainable parameter without a momentum (Adam's two moments)
    momentum: bool  # takes ``optimizer.momentum``; a momentum above 0 keeps one buffer more per parameter


OPTIMIZER_KINDS: dict[str, OptimizerKind] = {
    "sgd": OptimizerKind("SGD", state_slots=0, momentum=True),
    "adam": OptimizerKind("Adam", state_slots=2, momentum=False),
    "adamw": OptimizerKind("AdamW", state_slots=2, momentum=False),
    "rmsprop": OptimizerKind("RMSprop", state_slots=1, momentum=True),  # its square average
}
OptimizerName = Literal[tuple(OPTIMIZER_KINDS)]  # the schema's optimizer.name: every declared name, no other


def state_slots(name: str, momentum: float) -> int:
    """The fp32 state tensors the optimiser ``name`` keeps per trainable parameter under ``momentum``."""
    kind = OPTIMIZER_KINDS[name]
    return kind.state_slots + (1 if kind.momentum and momentum else 0)
