"""Measure the figures of the tiny learning runs (tests/training/test_learning.py) under one CPU configuration.

    python -m tests.training.measure_learning --config NAME [--threads N] [--nondeterministic] --out FILE.json

trains the fifteen tiny runs (five papers, real and the two mutations) exactly as the test does and writes, per
run, its R@1 gain, training-loss fall, each group's largest loss gradient and relative movement. The
configurations measured for the test's ``MEASURED`` table (run from the repository root):

* one thread:             ``--config "one thread"``
* two threads:            ``--config "two threads" --threads 2``
* default algorithms:     ``--config "default algorithms" --nondeterministic``
* scalar kernels:         ``ATEN_CPU_CAPABILITY=default DNNL_MAX_CPU_ISA=SSE41 MKL_CBWR=COMPATIBLE`` before
  ``--config "scalar kernels"``: ATen's, oneDNN's and MKL's non-vectorised code paths, standing in for a CPU
  whose vector units differ from this one's (the spawned workers inherit the environment).
"""

from __future__ import annotations

import argparse
import dataclasses
import json
import os
import platform
import tempfile
import time
from pathlib import Path

import torch

from dml_core.cpu_cores import available_cores
from dml_core.vocabulary import PAPER_KEYS
from tests.training.test_learning import MUTATIONS, REAL, train_side_by_side

KERNEL_VARIABLES = ("ATEN_CPU_CAPABILITY", "DNNL_MAX_CPU_ISA", "MKL_CBWR", "MKL_ENABLE_INSTRUCTIONS")


def _folder(path: Path) -> Path:
    path.mkdir(parents=True)
    return path


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--config", required=True, help="a name for this configuration, recorded in the file")
    parser.add_argument("--threads", type=int, default=1, help="torch threads in each run (the test uses 1)")
    parser.add_argument("--nondeterministic", action="store_true", help="torch's default algorithms")
    parser.add_argument("--papers", nargs="*", default=list(PAPER_KEYS))
    parser.add_argument("--out", type=Path, required=True)
    args = parser.parse_args()
    runs = [(key, variant) for key in args.papers for variant in (REAL, *sorted(MUTATIONS))]
    started = time.perf_counter()
    with tempfile.TemporaryDirectory() as scratch:
        scratch = Path(scratch)
        folders = iter(range(len(runs)))
        measured = train_side_by_side(
            runs, scratch / "data", lambda key: _folder(scratch / f"{key}-{next(folders)}"),
            workers=max(1, available_cores() // args.threads), threads=args.threads,
            deterministic=not args.nondeterministic,
        )  # fmt: skip
    record = {
        "config": args.config,
        "threads": args.threads,
        "deterministic": not args.nondeterministic,
        "kernels": {name: os.environ[name] for name in KERNEL_VARIABLES if name in os.environ},
        "cpu": platform.processor() or platform.machine(),
        "torch": torch.__version__,
        "seconds": round(time.perf_counter() - started),
        "runs": [
            {"key": k, "variant": v, **dataclasses.asdict(run), "r1_gain": run.r1_gain}
            for (k, v), run in measured.items()
        ],
    }
    args.out.write_text(json.dumps(record, indent=1) + "\n")
    for entry in record["runs"]:
        gain, fall = entry["r1_gain"], entry["loss_fall"]
        print(f"{entry['key']:8} {entry['variant']:36} R@1 {gain:+6.2f}  loss fall {fall:+.3f}")


if __name__ == "__main__":
    main()
