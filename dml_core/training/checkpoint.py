"""Training checkpoints, written atomically: a crash mid-write leaves the previous checkpoint intact."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import torch

from dml_core.atomic_io import atomic_write

CHECKPOINT_NAME = "checkpoint.pt"


def save_checkpoint(path: Path, state: dict[str, Any]) -> Path:
    return atomic_write(path, lambda handle: torch.save(state, handle))


def load_checkpoint(path: Path) -> dict[str, Any]:
    # Our own files: they hold RNG states and plain Python records next to tensors.
    return torch.load(path, map_location="cpu", weights_only=False)
