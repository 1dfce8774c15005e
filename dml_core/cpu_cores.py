"""How many CPU cores this process may use (its affinity, as a container or ``taskset`` limits it), and a block
of work held to one CPU thread."""

from __future__ import annotations

import contextlib
import os
from collections.abc import Iterator


def available_cores() -> int:
    """At least 1; ``os.cpu_count()`` where the platform has no affinity call."""
    return len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else os.cpu_count() or 1


@contextlib.contextmanager
def one_cpu_thread() -> Iterator[None]:
    """This process at one CPU thread for the block, as a side-by-side worker is: torch's (the kNN pass's numba
    follows it) and the BLAS and OpenMP pools already loaded (threadpoolctl), which ``ONE_THREAD_ENVIRONMENT`` can
    no longer reach once they are. For a mini run trained elsewhere than in a worker (a local or Slurm job), and
    for the glyph pretraining, whose cached weights must not depend on the machine's core count."""
    import torch  # here: ``available_cores`` stays light for the command line
    from threadpoolctl import threadpool_limits

    threads = torch.get_num_threads()
    torch.set_num_threads(1)
    try:
        with threadpool_limits(limits=1):
            yield
    finally:
        torch.set_num_threads(threads)
