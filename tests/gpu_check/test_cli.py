"""The GPU check's command on the CPU: end to end every CUDA part says "skipped: no GPU"; ``--parts`` and
``--rerun-failed`` pick parts; ``--time-limit`` skips or stops parts, never failing them; the report is written
after each part, atomically, and merged; the exit status names each failure. Fake parts come in through
``main``'s ``parts`` argument (the registry seam)."""

import json
import os
import subprocess
import sys
import time
from pathlib import Path

import pytest

from dml_core.gpu_check import cli as cli_module
from dml_core.gpu_check import part as part_module
from dml_core.gpu_check.cli import main
from dml_core.gpu_check.device import GpuState, probe_gpu
from dml_core.gpu_check.part import Outcome, Part, PartFailed
from dml_core.gpu_check.registry import PARTS
from dml_core.gpu_check.report import NO_GPU, SCHEMA, load_report
from tests.processes import completed_report

ROOT = Path(__file__).resolve().parents[2]
NO_GPU_HERE = GpuState()
H100 = GpuState(name="NVIDIA H100 80GB HBM3")


class FakeParts:
    """A registry of parts that record their calls; ``fail`` names the parts that fail, ``crash`` those that raise."""

    def __init__(self, names="abc", needs_gpu=False, fail=(), crash=()):
        self.calls, self.fail, self.crash = [], set(fail), set(crash)
        self.parts = {name: Part(name, f"part {name}", self._runner(name), needs_gpu) for name in names}

    def _runner(self, name):
        def run(context):
            self.calls.append(name)
            assert context.work_dir.name == name
            if name in self.crash:
                raise RuntimeError(f"{name} crashed")
            if name in self.fail:
                raise PartFailed(f"{name} found a bug", {"seen": 1})
            return Outcome(f"{name} fine", {"value": len(self.calls)})

        return run


def _check(tmp_path, argv, fake, gpu=H100):
    return main([*argv, "--report-dir", str(tmp_path / "report"), "--work-dir", str(tmp_path / "work")],
                parts=fake.parts, gpu=gpu)  # fmt: skip


def _report(tmp_path, name="gpu-check-nvidia-h100-80gb-hbm3.json"):
    return json.loads((tmp_path / "report" / name).read_text())


@pytest.mark.skipif(probe_gpu().usable or probe_gpu().problem is not None, reason="needs a machine without a GPU")
def test_on_the_cpu_every_cuda_part_is_skipped_end_to_end(tmp_path):
    environment = {**os.environ, "PYTHONPATH": str(ROOT), "HF_HUB_OFFLINE": "1"}
    command = [sys.executable, "-m", "dml_core.gpu_check", "--report-dir", str(tmp_path)]
    completed = subprocess.run(command, capture_output=True, text=True, cwd=tmp_path, env=environment, timeout=300)
    assert completed.returncode == 0, completed_report(completed)
    report = json.loads((tmp_path / "gpu-check-cpu.json").read_text())
    assert report["schema"] == SCHEMA and report["device"] == "no usable GPU"
    assert set(report["parts"]) == set(PARTS)
    for name, part in report["parts"].items():
        assert part["status"] == NO_GPU, name  # never "passed" without a GPU
        assert part["environment"]["torch"] and part["environment"]["python"] and part["environment"]["git"]
    table = completed.stdout[completed.stdout.index("part ") :]
    assert all(f"{name}*" in table for name in PARTS)
    assert list(tmp_path.iterdir()) == [tmp_path / "gpu-check-cpu.json"]  # no temporaries, no scratch left here


def test_parts_runs_only_the_named_parts_in_the_registrys_order(tmp_path):
    fake = FakeParts()
    assert _check(tmp_path, ["--parts", "c,a"], fake) == 0
    assert fake.calls == ["a", "c"]
    assert set(_report(tmp_path)["parts"]) == {"a", "c"}


def test_an_unknown_part_is_refused_with_the_known_ones(tmp_path, capsys):
    assert _check(tmp_path, ["--parts", "a,zz"], FakeParts()) == 2
    assert "--parts: unknown part 'zz'; expected one of a, b, c" in capsys.readouterr().err


def test_a_failure_is_named_and_sets_the_exit_status_and_the_next_part_still_runs(tmp_path, capsys):
    fake = FakeParts(fail="b", crash="c")
    assert _check(tmp_path, [], fake) == 1
    assert fake.calls == ["a", "b", "c"]
    err = capsys.readouterr().err
    assert "FAILED b: b found a bug" in err and "FAILED c: RuntimeError: c crashed" in err and "FAILED a" not in err
    parts = _report(tmp_path)["parts"]
    assert parts["a"]["status"] == "passed" and parts["a"]["summary"] == "a fine"
    assert parts["b"]["status"] == "failed: b found a bug" and parts["b"]["figures"] == {"seen": 1}
    assert "c crashed" in parts["c"]["figures"]["traceback"]


def test_rerun_failed_runs_only_what_did_not_pass_and_merges(tmp_path):
    first = FakeParts(fail="b")
    assert _check(tmp_path, ["--parts", "a,b"], first) == 1
    before = _report(tmp_path)["parts"]["a"]
    second = FakeParts()  # b is fixed; c never ran
    assert _check(tmp_path, ["--rerun-failed"], second) == 0
    assert second.calls == ["b", "c"]
    parts = _report(tmp_path)["parts"]
    assert parts["a"] == before  # kept as it was
    assert parts["b"]["status"] == parts["c"]["status"] == "passed"
    third = FakeParts()
    assert _check(tmp_path, ["--rerun-failed"], third) == 0 and third.calls == []


def test_without_a_gpu_cuda_parts_are_skipped_never_run_and_rerun_later(tmp_path):
    fake = FakeParts(needs_gpu=True)
    assert _check(tmp_path, [], fake, gpu=NO_GPU_HERE) == 0
    assert fake.calls == []
    assert {part["status"] for part in _report(tmp_path, "gpu-check-cpu.json")["parts"].values()} == {NO_GPU}
    rerun = FakeParts(needs_gpu=False)  # a skipped part did not run: --rerun-failed takes it again
    assert _check(tmp_path, ["--rerun-failed"], rerun, gpu=NO_GPU_HERE) == 0 and rerun.calls == ["a", "b", "c"]


def test_a_gpu_that_torch_cannot_use_fails_every_cuda_part(tmp_path, capsys):
    fake = FakeParts(needs_gpu=True)
    broken = GpuState(problem="a GPU is present (/dev/nvidia0 exists) but torch cannot use it: driver too old")
    assert _check(tmp_path, [], fake, gpu=broken) == 1
    assert fake.calls == []
    parts = _report(tmp_path, "gpu-check-cpu.json")["parts"]
    assert {part["status"] for part in parts.values()} == {f"failed: {broken.problem}"}
    assert capsys.readouterr().err.count("FAILED") == 3


def test_the_report_is_written_after_each_part_and_survives_an_interrupted_check(tmp_path):
    fake = FakeParts()
    seen_while_b_runs = {}

    def interrupted(context):
        seen_while_b_runs.update(load_report(tmp_path / "report" / "gpu-check-nvidia-h100-80gb-hbm3.json"))
        raise KeyboardInterrupt

    fake.parts["b"] = Part("b", "part b", interrupted, needs_gpu=False)
    with pytest.raises(KeyboardInterrupt):
        _check(tmp_path, [], fake)
    assert set(seen_while_b_runs) == {"a"} and seen_while_b_runs["a"].passed
    assert set(_report(tmp_path)["parts"]) == {"a"}  # complete JSON with the finished part
    assert [path.name for path in (tmp_path / "report").iterdir()] == ["gpu-check-nvidia-h100-80gb-hbm3.json"]


def test_a_damaged_report_is_named_not_overwritten(tmp_path, capsys):
    path = tmp_path / "report" / "gpu-check-nvidia-h100-80gb-hbm3.json"
    path.parent.mkdir()
    path.write_text('{"schema": "something else", "parts": {}}')
    assert _check(tmp_path, [], FakeParts()) == 2
    assert f"{path}: expected a GPU check report" in capsys.readouterr().err
    assert json.loads(path.read_text())["schema"] == "something else"


class FakeClock:
    """``time`` for the check's modules with a monotonic clock the parts move on (``perf_counter`` stays real)."""

    def __init__(self):
        self.now = 1000.0
        self.perf_counter = time.perf_counter

    def monotonic(self):
        return self.now


def test_a_time_limit_skips_what_cannot_fit_stops_what_runs_out_and_the_next_call_goes_on(
    tmp_path, monkeypatch, capsys
):
    clock = FakeClock()
    monkeypatch.setattr(cli_module, "time", clock)
    monkeypatch.setattr(part_module, "time", clock)
    calls = []

    def slow(context):  # a part that cannot stop early: takes 60 of the 100 seconds
        calls.append("a")
        clock.now += 60
        return Outcome("a fine")

    def rounds(context):  # a part that stops between rounds at the limit, keeping what it measured
        calls.append("c")
        figures = {}
        for round_ in range(3):
            context.stop_if_out_of_time(f"{round_} of 3 rounds", figures)
            figures[round_] = "measured"
            clock.now += 25
        return Outcome("c fine", figures)

    parts = {
        "a": Part("a", "part a", slow, needs_gpu=False, needs_seconds=10),
        "b": Part(
            "b", "part b", lambda context: calls.append("b") or Outcome("b fine"), needs_gpu=False, needs_seconds=50
        ),
        "c": Part("c", "part c", rounds, needs_gpu=False, needs_seconds=5),
    }
    argv = ["--time-limit", "100", "--report-dir", str(tmp_path / "report"), "--work-dir", str(tmp_path / "work")]
    assert main(argv, parts=parts, gpu=H100) == 0  # nothing failed
    assert calls == ["a", "c"]
    report = _report(tmp_path)["parts"]
    assert report["a"]["status"] == "passed"
    assert report["b"]["status"] == "skipped: time limit (40 s left, needs 50 s)"
    assert report["c"]["status"] == "stopped: time limit reached after 2 of 3 rounds"
    assert report["c"]["figures"] == {"0": "measured", "1": "measured"}
    assert "not finished within --time-limit: b, c; the next call's --rerun-failed goes on" in capsys.readouterr().out
    calls.clear()
    assert main([*argv[2:], "--rerun-failed"], parts=parts, gpu=H100) == 0  # no limit this time
    assert calls == ["b", "c"]
    assert _report(tmp_path)["parts"]["c"]["status"] == "passed"


@pytest.mark.parametrize("value", ["0", "-5", "soon", "inf", "nan"])
def test_a_time_limit_that_is_not_a_positive_number_of_seconds_is_refused(tmp_path, value, capsys):
    with pytest.raises(SystemExit) as exited:
        _check(tmp_path, ["--time-limit", value], FakeParts())
    assert exited.value.code == 2
    assert f"--time-limit: expected a number of seconds above 0, found '{value}'" in capsys.readouterr().err


def test_every_part_of_the_check_says_the_seconds_it_needs():
    # A part without them (0) would start with any time left, and the lent machine's call would end inside it.
    assert all(part.needs_seconds > 0 for part in PARTS.values()), {name: p.needs_seconds for name, p in PARTS.items()}
