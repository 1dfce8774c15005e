"""``run_side_by_side``: every job in its own spawned worker of one torch thread, results and errors back as each
ends, and leaving early stops the workers instead of waiting for them."""

import os
import time
from contextlib import closing

import pytest
import torch

from dml_core.errors import InputError
from dml_core.runner.side_by_side import ONE_THREAD_ENVIRONMENT, WorkerDied, run_side_by_side


def _where(job: int) -> tuple[int, int, int, dict]:
    return (
        job * 10,
        torch.get_num_threads(),
        os.getpid(),
        {name: os.environ.get(name) for name in ONE_THREAD_ENVIRONMENT},
    )


def _fails_on_two(job: int) -> int:
    if job == 2:
        raise InputError(f"job {job}: expected anything else")
    return job


def _dies_on_two(job: int) -> int:
    if job == 2:
        os._exit(3)  # as a crash in native code or a signal ends a worker: no exception to send back
    time.sleep(5)
    return job


def _sleeps(seconds: int) -> int:
    time.sleep(seconds)
    return seconds


def test_each_job_runs_in_a_worker_of_one_thread_and_its_result_comes_back(monkeypatch):
    monkeypatch.setenv("OMP_NUM_THREADS", "7")
    monkeypatch.delenv("OPENBLAS_NUM_THREADS", raising=False)
    outcomes = dict(run_side_by_side(_where, [1, 2, 3], workers=2))
    assert {job: result[0] for job, result in outcomes.items()} == {1: 10, 2: 20, 3: 30}
    assert {result[1] for result in outcomes.values()} == {1}
    pids = {result[2] for result in outcomes.values()}
    assert os.getpid() not in pids and 1 <= len(pids) <= 2
    assert all(result[3] == ONE_THREAD_ENVIRONMENT for result in outcomes.values())  # BLAS and OpenMP too
    assert (
        os.environ["OMP_NUM_THREADS"] == "7" and "OPENBLAS_NUM_THREADS" not in os.environ
    )  # this process's, as before


def test_an_exception_comes_back_in_place_of_its_result():
    outcomes = dict(run_side_by_side(_fails_on_two, [1, 2, 3], workers=2))
    assert outcomes[1] == 1 and outcomes[3] == 3
    assert isinstance(outcomes[2], InputError) and str(outcomes[2]) == "job 2: expected anything else"


def test_a_worker_that_dies_is_named_with_its_exit_code_for_each_job_it_took_down():
    outcomes = dict(run_side_by_side(_dies_on_two, [1, 2, 3], workers=2))
    assert isinstance(outcomes[2], WorkerDied)
    assert str(outcomes[2]).startswith("2: not finished: a worker process ended abruptly (exit codes pid ")
    assert ": 3" in str(outcomes[2])  # the worker's own exit code, beside the others the pool then ended
    assert all(isinstance(outcome, WorkerDied | int) for outcome in outcomes.values())


def test_leaving_early_stops_the_workers_under_way():
    started = time.perf_counter()
    with closing(run_side_by_side(_sleeps, [0, 120], workers=2)) as outcomes:
        assert next(outcomes) == (0, 0)
    assert time.perf_counter() - started < 60  # the 120 s job was stopped, not waited for


def test_workers_below_one_is_refused():
    with pytest.raises(ValueError, match="workers: expected >= 1, found 0"):
        list(run_side_by_side(_where, [1], workers=0))
