"""How long the runs left of a paper will take, from the pace of the runs this invocation has finished."""

from __future__ import annotations

import math
import time
from collections.abc import Sequence
from dataclasses import dataclass, field

from dml_core.readable import readable_duration


def counted(number: int, noun: str) -> str:
    """``number`` and ``noun``, plural unless one (the nouns here take an s).

    >>> counted(1, "run"), counted(3, "worker process"), counted(0, "run")
    ('1 run', '3 worker processes', '0 runs')
    """
    return f"{number} {noun}{'' if number == 1 else ('es' if noun.endswith('s') else 's')}"


def eta_text(seconds_per_run: Sequence[float], runs_left: int) -> str:
    """``ETA 8 min: 4 runs left at 2 min each so far`` (the mean of the runs timed so far; "" before any).

    >>> eta_text([60.0, 180.0], 4)
    'ETA 8 min: 4 runs left at 2 min each so far'
    >>> eta_text([5400.0], 1), eta_text([], 3), eta_text([30.0], 0)
    ('ETA 1.5 h: 1 run left at 1.5 h each so far', '', '')
    """
    if not seconds_per_run or runs_left <= 0:
        return ""
    mean = sum(seconds_per_run) / len(seconds_per_run)
    return (
        f"ETA {readable_duration(mean * runs_left)}: {counted(runs_left, 'run')} left at {readable_duration(mean)} "
        "each so far"
    )


def side_by_side_eta(elapsed: float, ended: int, runs: int, workers: int) -> str:
    """The time left when ``ended`` of ``runs`` have ended after ``elapsed`` seconds, ``workers`` at a time: the
    rounds of runs left at the pace of a round so far.

    >>> side_by_side_eta(240.0, 1, 6, 2), side_by_side_eta(250.0, 2, 6, 2), side_by_side_eta(500.0, 6, 6, 2)
    (' (ETA 12 min: 5 runs left)', ' (ETA 8 min: 4 runs left)', '')
    """
    left = runs - ended
    if left <= 0:
        return ""
    per_round = elapsed / math.ceil(ended / workers)
    return f" (ETA {readable_duration(per_round * math.ceil(left / workers))}: {counted(left, 'run')} left)"


@dataclass
class RunClock:
    """Times the runs of one invocation, one after the other, for :func:`eta_text`."""

    seconds: list[float] = field(default_factory=list)
    _started: float | None = None

    def start(self) -> None:
        self._started = time.perf_counter()

    def stop(self) -> float:
        """Record the run started last; returns its seconds."""
        elapsed = time.perf_counter() - (self._started if self._started is not None else time.perf_counter())
        self.seconds.append(elapsed)
        self._started = None
        return elapsed

    def eta(self, runs_left: int) -> str:
        """``" (ETA ...)"`` for ``runs_left`` runs still to train, "" before the first run ends."""
        text = eta_text(self.seconds, runs_left)
        return f" ({text})" if text else ""
