"""The host's load while a run trains, so that its train time says whether it had the machine to itself.

The 1-minute load average (runnable and waiting tasks of the whole host, not of one container) is sampled each time
the trainer adds to the run's train time, beside the host's CPU count; a results file that lacked it could not tell
a busy machine's time from a slow run's (docs/training.md). The running state lives in the trainer's timing, so a
resumed run keeps its earlier samples; the results file gets ``record``'s mean and maximum.
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


def _cpus() -> int:
    return os.cpu_count() or 1


def new_state() -> dict:
    """The running samples of one run, as its checkpoints keep them: each load also over its host's CPUs, since a
    resumed run may train on a host with another CPU count (``cpus`` is the last host's, ``other_cpus`` the
    earlier ones').

    >>> new_state()["samples"]
    0
    """
    return {"cpus": _cpus(), "samples": 0, "total": 0.0, "max": 0.0, "total_per_cpu": 0.0, "max_per_cpu": 0.0,
            "other_cpus": []}  # fmt: skip


def add_sample(state: dict, load: float | None, cpus: int | None = None) -> None:
    """Count ``load`` (a ``load_average()`` reading; None is not counted) on a host of ``cpus`` CPUs (this one's by
    default) into ``state``.

    >>> state = new_state(); add_sample(state, 2.0, cpus=2); add_sample(state, 4.0, cpus=2); add_sample(state, None)
    >>> state["samples"], state["total"], state["max"], state["total_per_cpu"]
    (2, 6.0, 4.0, 3.0)
    >>> add_sample(state, 8.0, cpus=16); state["cpus"], state["other_cpus"], state["max_per_cpu"]
    (16, [2], 2.0)
    """
    if load is None:
        return
    cpus = cpus or _cpus()
    _add_per_cpu_sums(state)
    if cpus != state["cpus"]:
        if state["samples"] and state["cpus"] not in state["other_cpus"]:
            state["other_cpus"].append(state["cpus"])
        state["cpus"] = cpus
    state["samples"] += 1
    state["total"] += load
    state["max"] = max(state["max"], load)
    state["total_per_cpu"] += load / cpus
    state["max_per_cpu"] = max(state["max_per_cpu"], load / cpus)


def _add_per_cpu_sums(state: dict) -> None:
    """A state of a checkpoint written before the per-CPU sums: one host so far, so they follow from the totals."""
    state.setdefault("total_per_cpu", state["total"] / state["cpus"])
    state.setdefault("max_per_cpu", state["max"] / state["cpus"])
    state.setdefault("other_cpus", [])


def record(state: dict) -> dict | None:
    """The results file's ``timing.host_load``: the host's CPUs and the samples' count, mean and maximum, as
    sampled and over each sample's host's CPUs (the CPU counts of earlier hosts where a resumed run moved); None
    without a sample.

    >>> state = new_state(); add_sample(state, 2.0, cpus=2); add_sample(state, 4.0, cpus=2)
    >>> record(state)
    {'cpus': 2, 'samples': 2, 'mean': 3.0, 'max': 4.0, 'mean_per_cpu': 1.5, 'max_per_cpu': 2.0, 'other_cpus': []}
    >>> record(new_state()) is None
    True
    """
    samples = state["samples"]
    if not samples:
        return None
    _add_per_cpu_sums(state)
    return {
        "cpus": state["cpus"],
        "samples": samples,
        "mean": state["total"] / samples,
        "max": state["max"],
        "mean_per_cpu": state["total_per_cpu"] / samples,
        "max_per_cpu": state["max_per_cpu"],
        "other_cpus": sorted(state["other_cpus"]),
    }


def shared(mean_per_cpu: float) -> bool:
    """Whether a run whose host load averaged ``mean_per_cpu`` per CPU shared its CPUs with other work.

    >>> shared(2.1 / 2), shared(5.3 / 2)
    (False, True)
    """
    return mean_per_cpu > SHARED_LOAD


def shared_host_note(loads: Iterable) -> str:
    """The tables' flag for times measured on a shared host: the most loaded of ``loads`` (results files'
    ``timing.host_load``: ``HostLoadRecord``s, or None where not recorded), or "" when none was.

    >>> from dml_core.results import HostLoadRecord as Load
    >>> alone, busy = Load(cpus=2, samples=3, mean=2.2, max=3.0), Load(cpus=2, samples=3, mean=5.1, max=6.0)
    >>> shared_host_note([None, alone, busy, Load(cpus=16, samples=3, mean=20.0, max=21.0)])
    '⚠ host shared (load 5.1 on 2 CPUs)'
    >>> shared_host_note([None, alone])
    ''
    >>> moved = Load(cpus=2, samples=9, mean=4.0, max=9.0, mean_per_cpu=1.6, max_per_cpu=2.5, other_cpus=[16])
    >>> shared_host_note([moved])
    '⚠ host shared (load 1.6 per CPU, hosts of 16 and 2 CPUs)'
    """
    loaded = [load for load in loads if load is not None and shared(load.load_per_cpu)]
    if not loaded:
        return ""
    worst = max(loaded, key=lambda load: load.load_per_cpu)
    if worst.other_cpus:
        hosts = " and ".join(str(cpus) for cpus in [*worst.other_cpus, worst.cpus])
        return f"⚠ host shared (load {worst.load_per_cpu:.1f} per CPU, hosts of {hosts} CPUs)"
    return f"⚠ host shared (load {worst.mean:.1f} on {worst.cpus} CPUs)"
