"""Durations and sizes as a reader says them, in the runner's lines and on the pages alike (no torch, no pandas)."""

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


def readable_bytes(size: float) -> str:
    """A size as people read it.

    >>> readable_bytes(28_800), readable_bytes(11_702_501_376), readable_bytes(512)
    ('28.1 KiB', '10.9 GiB', '512 B')
    """
    if size < 1024:
        return f"{size:.0f} B"
    for unit in ("KiB", "MiB", "GiB"):
        size /= 1024
        if size < 1024 or unit == "GiB":
            break
    return f"{size:.1f} {unit}"
