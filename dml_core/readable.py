"""Durations as a reader says them, in the runner's lines and on the pages alike (no torch, no pandas)."""

from __future__ import annotations

import math

NOT_AVAILABLE = "—"


def readable_duration(seconds: float) -> str:
    """Seconds as a reader says them.

    >>> [readable_duration(s) for s in (0.88, 42, 600, 5400, 47520, 400000)]
    ['0.9 s', '42 s', '10 min', '1.5 h', '13.2 h', '4.6 days']
    """
    if math.isnan(seconds):
        return NOT_AVAILABLE
    if seconds < 10:
        return f"{seconds:.1f} s"
    if seconds < 90:
        return f"{seconds:.0f} s"
    if seconds < 90 * 60:
        return f"{seconds / 60:.0f} min"
    if seconds < 48 * 3600:
        return f"{seconds / 3600:.1f} h"
    return f"{seconds / 86400:.1f} days"
