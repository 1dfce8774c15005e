"""Running a command under torchrun in tests: two CPU processes over gloo, cleaned up on a time-out."""

import os
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]


def torchrun(nproc: int, *args: str, env: dict | None = None, timeout: float = 300) -> subprocess.CompletedProcess:
    """``torchrun --nproc-per-node N`` on this machine (gloo on the CPU), one thread per process.

    On a time-out torchrun gets SIGTERM, which it passes on: its workers run in sessions of their own, so
    killing torchrun outright would leave them behind."""
    command = [sys.executable, "-m", "torch.distributed.run", "--standalone", "--nproc-per-node", str(nproc)]
    environment = {**os.environ, "PYTHONPATH": str(ROOT), "OMP_NUM_THREADS": "1", **(env or {})}
    with subprocess.Popen(
        [*command, *args], env=environment, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True
    ) as process:
        try:
            stdout, stderr = process.communicate(timeout=timeout)
        except subprocess.TimeoutExpired:
            process.terminate()
            stdout, stderr = process.communicate(timeout=60)
            pytest.fail(f"torchrun {' '.join(args)} ran past {timeout} s: {stderr[-3000:]}")
    return subprocess.CompletedProcess(process.args, process.returncode, stdout, stderr)
