"""Noticing a NaN/inf loss without a host synchronisation every iteration.

On CUDA, ``observe`` records the first non-finite iteration and its loss terms on the device; ``check`` (called
every ``sync_every`` iterations and before every checkpoint and evaluation) reads them back and raises. Steps taken
after the bad one are never checkpointed, so the last good checkpoint survives. On the CPU a check costs nothing
and runs every iteration.
"""

from __future__ import annotations

from pathlib import Path

import torch

from dml_core.errors import NonFiniteError


def checkpoint_left(path: Path) -> str:
    """What a stopped run leaves to resume from, as it is on disk (a run stopped before its first checkpoint
    has none).

    >>> checkpoint_left(Path("no-such-folder/checkpoint.pt"))
    'no checkpoint was written before it (no-such-folder/checkpoint.pt): a rerun starts from iteration 0'
    """
    if path.is_file():
        return f"the last good checkpoint ({path}) is kept"
    return f"no checkpoint was written before it ({path}): a rerun starts from iteration 0"


class NonFiniteWatch:
    def __init__(self, device: torch.device) -> None:
        self.device = device
        self.first_bad = torch.full((), -1, dtype=torch.long, device=device)
        self.names: list[str] = []
        self.values: torch.Tensor | None = None

    def observe(self, iteration: int, loss: torch.Tensor, terms: dict[str, torch.Tensor]) -> None:
        names = ["loss", *terms]
        values = torch.stack(
            [loss.detach().float().reshape(()), *(t.detach().float().reshape(()) for t in terms.values())]
        )
        if self.values is None or names != self.names:
            self.names, self.values = names, torch.zeros_like(values)
        fresh = ~torch.isfinite(loss.detach()) & (self.first_bad < 0)
        self.first_bad = torch.where(fresh, torch.full_like(self.first_bad, iteration), self.first_bad)
        self.values = torch.where(fresh, values, self.values)

    def check(self, what: str) -> None:
        """Raise ``NonFiniteError`` naming the first bad iteration and its terms, if there was one."""
        first_bad = int(self.first_bad)
        if first_bad >= 0:
            terms = dict(zip(self.names, self.values.tolist(), strict=True))
            raise NonFiniteError(f"{what}: non-finite loss at iteration {first_bad}; terms {terms}")
