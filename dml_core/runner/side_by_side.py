"""Train a paper's CPU runs side by side: one worker process per core, each run on one CPU thread.

The mini tier trains this way, because one thread per run makes a run's numbers independent of the machine's core
count (torch's intra-op threads change the order of floating-point sums), and processes use the cores better than
threads do on these small models (docs/tiers.md). Each worker is a fresh (spawned) interpreter, so nothing of this
process's torch state leaks into a run; Ctrl-C stops every worker, and an interrupted run resumes.
"""

from __future__ import annotations

import multiprocessing
import os
from collections.abc import Callable, Iterator, Sequence
from concurrent.futures import FIRST_COMPLETED, Future, ProcessPoolExecutor, wait
from concurrent.futures.process import BrokenProcessPool
from typing import TypeVar
from unittest import mock

import torch

Job = TypeVar("Job")


# Every thread pool a run may use, read when its library loads: OpenMP (torch, faiss), numpy's BLAS, numba.
ONE_THREAD_ENVIRONMENT = {
    name: "1" for name in ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS", "NUMBA_NUM_THREADS")
}


def _one_thread() -> None:
    torch.set_num_threads(1)


class WorkerDied(RuntimeError):
    """A worker process ended without a Python error (a signal, a crash in native code, ``os._exit``): every job
    under way or waiting then fails with this, which names the job and each worker's exit code."""

    def __init__(self, job: object, workers: Sequence[multiprocessing.Process]):
        for worker in workers:
            worker.join(timeout=30)  # the pool ends the others once one has died
        codes = ", ".join(f"pid {worker.pid}: {worker.exitcode}" for worker in workers)
        super().__init__(
            f"{job}: not finished: a worker process ended abruptly (exit codes {codes}; -N is signal N, -9 often "
            "the out-of-memory killer); what it wrote before is on stderr above this"
        )


def run_side_by_side(
    work: Callable[[Job], object], jobs: Sequence[Job], workers: int
) -> Iterator[tuple[Job, object | BaseException]]:
    """Run ``work(job)`` for every job in ``workers`` spawned processes of one thread each (torch, OpenMP, BLAS,
    numba: ``ONE_THREAD_ENVIRONMENT``); yield ``(job, result)`` as each ends, its exception in place of the result
    where it raised. ``work`` and the jobs must pickle. Leaving the loop early (an error, Ctrl-C) cancels the jobs
    not started and stops the workers."""
    if workers < 1:
        raise ValueError(f"workers: expected >= 1, found {workers}")
    context = multiprocessing.get_context("spawn")
    pool = ProcessPoolExecutor(max_workers=min(workers, len(jobs)) or 1, mp_context=context, initializer=_one_thread)
    finished = False
    try:
        # In this process's environment while the pool starts its workers (as jobs are submitted; a spawned worker
        # copies it), then as before.
        with mock.patch.dict(os.environ, ONE_THREAD_ENVIRONMENT):
            pending: dict[Future, Job] = {pool.submit(work, job): job for job in jobs}
        started = list((getattr(pool, "_processes", None) or {}).values())
        while pending:
            done, _ = wait(pending, return_when=FIRST_COMPLETED)
            for future in done:
                job = pending.pop(future)
                error = future.exception()
                if isinstance(error, BrokenProcessPool):
                    error = WorkerDied(job, started)
                yield job, error if error is not None else future.result()
        finished = True
    finally:
        if not finished:
            # Python 3.11's pool has no public way to stop a running call: stop its processes, or an error or
            # Ctrl-C here would wait for every run under way to end. A run stopped mid-way resumes from its last
            # checkpoint, which is written atomically.
            for process in list((getattr(pool, "_processes", None) or {}).values()):
                process.terminate()
        pool.shutdown(wait=True, cancel_futures=True)
