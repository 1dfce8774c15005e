"""Running a command under torchrun in tests: CPU processes over gloo, each rank's output kept in its own log (so a
failure shows what each rank said, not the interleaved tail of all of them), cleaned up on a time-out."""

from __future__ import annotations

import os
import subprocess
import sys
import tempfile
from dataclasses import dataclass
from pathlib import Path

import pytest

from tests.processes import process_report

ROOT = Path(__file__).resolve().parents[1]


@dataclass(frozen=True)
class TorchrunOutcome:
    """What one torchrun did: its exit status, each rank's stdout and stderr (in rank order) and torchrun's own
    output (its summary of a failure: which rank failed first, its exit code)."""

    returncode: int
    rank_stdout: tuple[str, ...]
    rank_stderr: tuple[str, ...]
    launcher_output: str

    @property
    def stdout(self) -> str:
        """Every rank's stdout, rank 0 first."""
        return "".join(self.rank_stdout)

    def report(self) -> str:
        """The head and tail of each rank's output, then torchrun's summary: the message of a failed assertion."""
        blocks = []
        for rank, (out, err) in enumerate(zip(self.rank_stdout, self.rank_stderr, strict=True)):
            blocks += [(f"rank {rank} stdout", out), (f"rank {rank} stderr", err)]
        blocks.append((f"torchrun (exit status {self.returncode})", self.launcher_output))
        return process_report(blocks)


def _rank_logs(log_dir: Path, nproc: int, stream: str) -> tuple[str, ...]:
    """Rank i's ``stream`` log of the last attempt (``<log dir>/<run id>/attempt_<n>/<i>/<stream>.log``)."""
    outputs = []
    for rank in range(nproc):
        logs = sorted(log_dir.glob(f"*/attempt_*/{rank}/{stream}.log"))
        outputs.append(logs[-1].read_text(encoding="utf-8", errors="replace") if logs else "(no log written)")
    return tuple(outputs)


def torchrun(nproc: int, *args: str, env: dict | None = None, timeout: float = 300) -> TorchrunOutcome:
    """``torchrun --nproc-per-node N`` on this machine (gloo on the CPU), one thread per process.

    On a time-out torchrun gets SIGTERM, which it passes on: its workers run in sessions of their own, so
    killing torchrun outright would leave them behind."""
    with tempfile.TemporaryDirectory(prefix="torchrun-logs-") as logs:
        log_dir = Path(logs)
        command = [
            sys.executable, "-m", "torch.distributed.run", "--standalone", "--nproc-per-node", str(nproc),
            "--log-dir", str(log_dir), "--redirects", "3",
        ]  # fmt: skip
        environment = {**os.environ, "PYTHONPATH": str(ROOT), "OMP_NUM_THREADS": "1", **(env or {})}
        with subprocess.Popen(
            [*command, *args], env=environment, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True
        ) as process:
            try:
                launcher, _ = process.communicate(timeout=timeout)
                timed_out = False
            except subprocess.TimeoutExpired:
                process.terminate()
                launcher, _ = process.communicate(timeout=60)
                timed_out = True
        outcome = TorchrunOutcome(
            process.returncode, _rank_logs(log_dir, nproc, "stdout"), _rank_logs(log_dir, nproc, "stderr"), launcher
        )
    if timed_out:
        pytest.fail(f"torchrun {' '.join(args)} ran past {timeout} s\n{outcome.report()}")
    return outcome
