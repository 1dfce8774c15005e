"""Deterministic kernels for one training run: switched on around the run and back to what they were after it.

torch's switches are process-wide: a run that set them and left them set decided for whatever the process ran next
(``dml reproduce`` trains many runs in one process; a CPU run's setting reached a later CUDA run). ``run_determinism``
applies a run's settings and restores the ones it found.

Deterministic (``training.deterministic``, the default) means, on any device: ``torch.use_deterministic_algorithms``
(deterministic kernels wherever torch has one; ``warn_only``: an op without one warns instead of stopping the run:
on CUDA the backward of adaptive average pooling, which every backbone's pooling uses, has none); and on CUDA too:
cuDNN's deterministic algorithms with its benchmark off (benchmarking picks algorithms by timing, which differ from
run to run), and ``CUBLAS_WORKSPACE_CONFIG`` (deterministic cuBLAS reductions), set before the run's first CUDA
work. ``training.deterministic: false`` trades all of it for speed: cuDNN benchmarks, no deterministic kernels. The
results file records the settings the run trained under.
"""

from __future__ import annotations

import dataclasses
import os
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass

import torch

CUBLAS_WORKSPACE_VARIABLE = "CUBLAS_WORKSPACE_CONFIG"
# The settings torch's reproducibility notes give for deterministic cuBLAS (the first unless one is already set).
CUBLAS_DETERMINISTIC_WORKSPACES = (":4096:8", ":16:8")


@dataclass(frozen=True)
class DeterminismSettings:
    """The process-wide switches a run sets (``cublas_workspace_config`` None: the variable unset)."""

    deterministic_algorithms: bool
    warn_only: bool
    cudnn_deterministic: bool
    cudnn_benchmark: bool
    cublas_workspace_config: str | None

    @classmethod
    def current(cls) -> DeterminismSettings:
        return cls(
            torch.are_deterministic_algorithms_enabled(),
            torch.is_deterministic_algorithms_warn_only_enabled(),
            torch.backends.cudnn.deterministic,
            torch.backends.cudnn.benchmark,
            os.environ.get(CUBLAS_WORKSPACE_VARIABLE),
        )

    def apply(self) -> None:
        torch.use_deterministic_algorithms(self.deterministic_algorithms, warn_only=self.warn_only)
        torch.backends.cudnn.deterministic = self.cudnn_deterministic
        torch.backends.cudnn.benchmark = self.cudnn_benchmark
        if self.cublas_workspace_config is None:
            os.environ.pop(CUBLAS_WORKSPACE_VARIABLE, None)
        else:
            os.environ[CUBLAS_WORKSPACE_VARIABLE] = self.cublas_workspace_config


def run_settings(device: torch.device, deterministic: bool) -> DeterminismSettings:
    """What a run on ``device`` trains under; the cuBLAS variable is left as found off CUDA or when not
    deterministic."""
    found = os.environ.get(CUBLAS_WORKSPACE_VARIABLE)
    if not deterministic:
        return DeterminismSettings(False, False, False, device.type == "cuda", found)
    if device.type != "cuda" or found in CUBLAS_DETERMINISTIC_WORKSPACES:
        cublas = found
    else:
        cublas = CUBLAS_DETERMINISTIC_WORKSPACES[0]
    return DeterminismSettings(True, True, True, False, cublas)


@contextmanager
def run_determinism(device: torch.device, deterministic: bool) -> Iterator[dict]:
    """Train the block under ``run_settings``; yield their record for the results file; restore what was there."""
    found = DeterminismSettings.current()
    settings = run_settings(device, deterministic)
    settings.apply()
    try:
        yield {"deterministic": deterministic, **dataclasses.asdict(settings)}
    finally:
        found.apply()
