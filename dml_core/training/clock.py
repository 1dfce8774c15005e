"""The trainer's clock: wall-clock time read so that a GPU's queued work is booked where it was queued.

CUDA runs asynchronously: the host queues a step's kernels and moves on, and the queued work then ends inside
whatever waits for the GPU next (an evaluation's first copy to the host), which booked training as evaluation time.
``now`` waits for the device's queue before reading the clock: the trainer calls it at the boundaries of its timed
segments (before and after an evaluation or a checkpoint, at the end of an epoch). ``host`` reads it without
waiting, for the per-step data-wait time: a synchronisation every step would cost what it measures.
"""

from __future__ import annotations

import time

import torch


class DeviceClock:
    def __init__(self, device: torch.device) -> None:
        self.device = device

    def now(self) -> float:
        """Seconds, after the device has done the work queued on it."""
        if self.device.type == "cuda":
            torch.cuda.synchronize(self.device)
        return time.perf_counter()

    @staticmethod
    def host() -> float:
        """Seconds, now on the host (queued device work may still be running)."""
        return time.perf_counter()
