"""Training checkpoints, written atomically: a crash mid-write leaves the previous checkpoint intact.

The state is serialised in memory first, so its exact size is known: the free space is checked before anything
is written, and a failed write (disk full, read-only folder) is an ``OutputError`` naming the file instead of
torch's zip-writer message. A damaged or foreign file is refused by name on load, and the half-written copies a
killed run left beside the checkpoint are removed then (a resumed run starts by loading it).
"""

from __future__ import annotations

import io
import pickle
from pathlib import Path
from typing import Any

import torch

from dml_core.atomic_io import atomic_write_bytes, remove_stale_temporaries
from dml_core.errors import InputError
from dml_core.tier import Tier

CHECKPOINT_NAME = "checkpoint.pt"
REQUIRED_KEYS = ("recipe_sha256", "iteration", "model")

# Whether a run keeps its checkpoint once finished, per tier. A full-scale run keeps its trained model (worth
# evaluating again); smoke and mini runs are re-run, never re-used, and a tier's checkpoints add up to gigabytes
# (docs/tiers.md, "Disk and time per tier"). Their results file is what says they are finished (``--resume``
# and ``dml reproduce`` read it), so nothing else needs the checkpoint after the last iteration.
FINISHED_CHECKPOINT_KEPT = {Tier.FULL: True, Tier.SMOKE: False, Tier.MINI: False}


def keeps_finished_checkpoint(tier: Tier) -> bool:
    """Whether a finished run of ``tier`` keeps its checkpoint.

    >>> keeps_finished_checkpoint("full"), keeps_finished_checkpoint("smoke")
    (True, False)
    """
    return FINISHED_CHECKPOINT_KEPT[Tier(tier)]


def save_checkpoint(path: Path, state: dict[str, Any]) -> Path:
    buffer = io.BytesIO()
    torch.save(state, buffer)
    return atomic_write_bytes(path, buffer.getbuffer())


def remove_stale_checkpoint_temporaries(path: Path) -> list[Path]:
    """The half-written copies of ``path`` that killed runs left (``.checkpoint.pt.<host>-<pid>.*.tmp``)."""
    path = Path(path)
    return remove_stale_temporaries(path.parent, f".{path.name}.", ".tmp")


def load_checkpoint(path: Path) -> dict[str, Any]:
    """Load a checkpoint written by :func:`save_checkpoint`; anything else is an ``InputError`` naming the file."""
    path = Path(path)
    remove_stale_checkpoint_temporaries(path)
    if path.is_dir():
        raise InputError(f"{path}: is a folder, expected a checkpoint file")
    try:
        # Our own files: they hold RNG states and plain Python records next to tensors.
        state = torch.load(path, map_location="cpu", weights_only=False)
    except FileNotFoundError:
        raise InputError(f"{path}: checkpoint not found") from None
    except (RuntimeError, EOFError, OSError, ValueError, pickle.UnpicklingError) as error:
        reason = (str(error).strip().splitlines() or [type(error).__name__])[0].split(". ")[0].rstrip(".")
        raise InputError(
            f"{path}: not a readable checkpoint ({reason}); the file is truncated or damaged: "
            f"remove it to start over, or use another --out"
        ) from None
    missing = [key for key in REQUIRED_KEYS if not isinstance(state, dict) or key not in state]
    if missing:
        raise InputError(f"{path}: expected a training checkpoint with {', '.join(REQUIRED_KEYS)}, missing {missing}")
    return state
