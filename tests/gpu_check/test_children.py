"""The parts' child processes: a time-out is the child's failure, the check's time limit (``deadline``) stops it
without blaming it, and a deadline already past starts nothing. Real children (a sleeping python), on the CPU."""

import sys
import time

import pytest

from dml_core.gpu_check.children import run_child
from dml_core.gpu_check.part import PartFailed, PartStopped

SLEEPER = [sys.executable, "-c", "import time; print('started', flush=True); time.sleep(60)"]


def test_a_child_past_its_own_timeout_fails_the_part(tmp_path):
    with pytest.raises(PartFailed, match=r"the sleeper ran past 1 s \(log: .*sleeper.log\)"):
        run_child("the sleeper", SLEEPER, tmp_path / "sleeper.log", timeout=1, deadline=time.monotonic() + 600)


def test_the_check_s_time_limit_stops_a_child_without_failing_it(tmp_path):
    started = time.monotonic()
    with pytest.raises(PartStopped, match=r"time limit reached: the sleeper stopped after \d+ s") as stopped:
        run_child("the sleeper", SLEEPER, tmp_path / "sleeper.log", timeout=600, deadline=started + 1)
    assert not isinstance(stopped.value, PartFailed)
    assert time.monotonic() - started < 50  # ended at the deadline (SIGTERM ends a sleep), not at its 60 s


def test_a_deadline_already_past_starts_no_child(tmp_path):
    with pytest.raises(PartStopped, match="time limit reached before the sleeper started"):
        run_child("the sleeper", SLEEPER, tmp_path / "sleeper.log", timeout=600, deadline=time.monotonic() - 1)
    assert not (tmp_path / "sleeper.log").exists()


def test_without_a_deadline_a_child_that_ends_in_time_returns_its_output(tmp_path):
    command = [sys.executable, "-c", "print('done')"]
    assert run_child("the printer", command, tmp_path / "printer.log", timeout=60).strip() == "done"
