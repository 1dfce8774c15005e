"""Test-wide settings: offline hub, deterministic CPU torch, two threads (the CI machine's cores)."""

import os

os.environ.setdefault("HF_HUB_OFFLINE", "1")

import pytest
import torch

# Two threads (CI's cores) unless OMP_NUM_THREADS says otherwise: on a shared, loaded machine one thread
# avoids OpenMP oversubscription, which slows conv layers by 10x.
torch.set_num_threads(int(os.environ.get("OMP_NUM_THREADS") or min(2, os.cpu_count() or 1)))
torch.use_deterministic_algorithms(True, warn_only=True)


@pytest.fixture(autouse=True)
def _seed_everything():
    torch.manual_seed(0)
