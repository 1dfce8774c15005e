"""How many CPU cores this process may use: its affinity, as a container or ``taskset`` limits it."""

from __future__ import annotations

import os


def available_cores() -> int:
    """At least 1; ``os.cpu_count()`` where the platform has no affinity call."""
    return len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else os.cpu_count() or 1
