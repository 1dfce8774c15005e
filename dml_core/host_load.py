"""The host's load while a run trains, so that its train time says whether it had the machine to itself.

The 1-minute load average (runnable and waiting tasks of the whole host, not of one container) is sampled each time
the trainer adds to the run's train time (at each evaluation, checkpoint and epoch's end), beside the host's CPU
count. Why: anml's committed mini results say 1,206-2,217 s a run and cannot tell whether the machine was busy; the
same runs alone on a 2-core machine took 238-253 s. The running state lives in the trainer's timing, so a resumed
run keeps its earlier samples; the results file gets ``record``'s mean and maximum.
"""

from __future__ import annotations

import os
from collections.abc import Iterable

SHARED_LOAD = 1.5
"""A mean load above this many times the host's CPUs: the run's time was shared with other work (a run that trains
its workers side by side on every core keeps the load near the CPU count)."""


def load_average() -> float | None:
    """The host's 1-minute load average; None where the platform has none (Windows)."""
    try:
        return os.getloadavg()[0]
    except (AttributeError, OSError):
        return None


def new_state() -> dict:
    """The running samples of one run, as its checkpoints keep them.

    >>> new_state()["samples"]
    0
    """
    return {"cpus": os.cpu_count() or 1, "samples": 0, "total": 0.0, "max": 0.0}


def add_sample(state: dict, load: float | None) -> None:
    """Count ``load`` (a ``load_average()`` reading; None is not counted) into ``state``.

    >>> state = new_state(); add_sample(state, 2.0); add_sample(state, 4.0); add_sample(state, None)
    >>> state["samples"], state["total"], state["max"]
    (2, 6.0, 4.0)
    """
    if load is not None:
        state["samples"] += 1
        state["total"] += load
        state["max"] = max(state["max"], load)


def record(state: dict) -> dict | None:
    """The results file's ``timing.host_load``: the host's CPUs and the samples' count, mean and maximum; None
    without a sample.

    >>> state = new_state(); add_sample(state, 2.0); add_sample(state, 4.0)
    >>> {key: value for key, value in record(state).items() if key != "cpus"}
    {'samples': 2, 'mean': 3.0, 'max': 4.0}
    >>> record(new_state()) is None
    True
    """
    samples = state["samples"]
    if not samples:
        return None
    return {"cpus": state["cpus"], "samples": samples, "mean": state["total"] / samples, "max": state["max"]}


def shared(mean: float, cpus: int) -> bool:
    """Whether a run whose host load averaged ``mean`` on ``cpus`` CPUs shared them with other work.

    >>> shared(2.1, 2), shared(5.3, 2)
    (False, True)
    """
    return mean > SHARED_LOAD * cpus


def shared_host_note(loads: Iterable) -> str:
    """The tables' flag for times measured on a shared host: the most loaded of ``loads`` (results files'
    ``timing.host_load``: records with ``mean`` and ``cpus``, or None where not recorded), or "" when none was.

    >>> from types import SimpleNamespace as Load
    >>> shared_host_note([None, Load(mean=2.2, cpus=2), Load(mean=5.1, cpus=2), Load(mean=20.0, cpus=16)])
    '⚠ host shared (load 5.1 on 2 CPUs)'
    >>> shared_host_note([None, Load(mean=2.2, cpus=2)])
    ''
    """
    loaded = [load for load in loads if load is not None and shared(load.mean, load.cpus)]
    if not loaded:
        return ""
    worst = max(loaded, key=lambda load: load.mean / load.cpus)
    return f"⚠ host shared (load {worst.mean:.1f} on {worst.cpus} CPUs)"
