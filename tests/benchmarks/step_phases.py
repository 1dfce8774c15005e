"""Where a training step's time goes: data wait, forward, loss, backward, optimiser (and, on a GPU, host syncs).

``StepPhases.wrap`` hands ``train_step`` (the trainer's own step, unchanged) a model, loss, optimiser and schedule
that mark their phases: forward is the model's call, loss the loss's (with the output's cast to fp32 before it),
optimiser the optimiser's ``zero_grad`` and ``step`` and the schedule's step, backward the time between ``zero_grad``
and the optimiser's step (the backward and any gradient clipping); the caller marks the data wait. Each phase is
a wall-clock sum on the host and a ``torch.profiler`` range. With ``count_host_syncs``, the ops of the forward, the
loss and the backward that would make the host wait for a GPU are counted (tests/cuda_guards/host_syncs.py): on a
GPU run every tensor there lives on the device. The other phases read host tensors by design (the data side's crop
and flip draws; the step counts of an optimiser that is neither capturable nor fused, which Adam reads once per
parameter), reads that wait for no GPU but that a CPU run cannot tell from device reads.

On the CPU the host's wall clock is the phase's time (every op runs before the call returns). On a GPU the host only
queues kernels, so ``recording`` profiles the steps and ``report`` adds each phase's device time from the profile:
the kernels launched inside its range, the backward's from autograd's own events (CUDA backward runs on autograd's
device thread, outside the range of the thread that called it), and the host's time blocked in CUDA
synchronisations.
"""

from __future__ import annotations

import time
from collections import Counter
from contextlib import ExitStack, contextmanager

import torch
from torch.autograd import DeviceType
from torch.profiler import ProfilerActivity, profile, record_function

from tests.cuda_guards.host_syncs import HostSyncs

PHASES = ("data_wait", "forward", "loss", "backward", "optimiser")
SYNC_COUNTED_PHASES = ("forward", "loss", "backward")
RANGE_PREFIX = "dml::"
BACKWARD_EVENTS = "autograd::engine::evaluate_function"
SYNCHRONISATIONS = ("cudaDeviceSynchronize", "cudaStreamSynchronize", "cudaEventSynchronize")


class StepPhases:
    def __init__(self, device: torch.device, count_host_syncs: bool = False) -> None:
        self.device = device
        self.seconds = dict.fromkeys(PHASES, 0.0)
        self.host_syncs: Counter[str] | None = Counter() if count_host_syncs else None
        self.profile: profile | None = None
        self._backward: ExitStack | None = None  # the backward's phase, open from zero_grad to the optimiser step

    @contextmanager
    def phase(self, name: str):
        with record_function(RANGE_PREFIX + name), self._counting(name):
            started = time.perf_counter()
            try:
                yield
            finally:
                self.seconds[name] += time.perf_counter() - started

    @contextmanager
    def _counting(self, name: str):
        if self.host_syncs is None or name not in SYNC_COUNTED_PHASES:
            yield
            return
        with HostSyncs() as syncs:
            yield
        self.host_syncs.update(syncs.calls)

    def _timed(self, name: str, function, *args, **kwargs):
        with self.phase(name):
            return function(*args, **kwargs)

    def begin_backward(self) -> None:
        opened = ExitStack()
        opened.enter_context(self.phase("backward"))
        self._backward = opened

    def end_backward(self) -> None:
        self._backward.close()
        self._backward = None

    def wrap(self, model, loss, optimizer, scheduler) -> tuple:
        """(forward, loss, optimiser, schedule) for ``train_step``, each marking its phase."""
        return (
            lambda images: self._timed("forward", model, images),
            lambda output, labels: self._timed("loss", loss, output, labels),
            _PhasedOptimizer(optimizer, self),
            _PhasedSchedule(scheduler, self),
        )

    @contextmanager
    def recording(self):
        """Profile what runs inside on a GPU (the device's queue emptied at both ends); on the CPU, nothing more."""
        if self.device.type != "cuda":
            yield
            return
        torch.cuda.synchronize(self.device)
        with profile(activities=[ProfilerActivity.CPU, ProfilerActivity.CUDA]) as self.profile:
            yield
            torch.cuda.synchronize(self.device)

    def report(self, steps: int) -> dict:
        """Milliseconds per step: ``host_ms_per_step`` by phase (wall clock), and from a GPU's profile
        ``device_ms_per_step`` and ``host_sync_ms_per_step``."""
        report = {
            "method": "torch.profiler (device) and host wall clocks" if self.profile else "wall clocks",
            "steps": steps,
            "host_ms_per_step": {name: 1000 * seconds / steps for name, seconds in self.seconds.items()},
        }
        if self.profile is not None:
            report.update(profiled_ms_per_step(self.profile.key_averages(), steps))
        return report


def profiled_ms_per_step(averages, steps: int) -> dict:
    """From a profile's ``key_averages()``: each phase's device time (its range's kernels; the backward's from
    autograd's events), the kernels outside every phase, and the host's time in CUDA synchronisations."""
    # Host-side events (ranges, ops, CUDA runtime calls) by name; a range also has a device-side twin of the same name
    # (its span on the GPU), and each kernel an event of its own: those count once, as kernels.
    events = {event.key: event for event in averages if event.device_type == DeviceType.CPU}
    kernels = [event for event in averages if event.device_type != DeviceType.CPU and not event.is_user_annotation]

    def device_total(event) -> float:
        return event.device_time_total if event is not None else 0.0

    device = {name: device_total(events.get(RANGE_PREFIX + name)) for name in PHASES if name != "backward"}
    device["backward"] = sum(device_total(event) for key, event in events.items() if key.startswith(BACKWARD_EVENTS))
    device["outside_the_phases"] = sum(event.self_device_time_total for event in kernels) - sum(device.values())
    syncs = [events[key] for key in SYNCHRONISATIONS if key in events]
    return {
        "device_ms_per_step": {name: micros / 1000 / steps for name, micros in device.items()},
        "host_sync_ms_per_step": sum(event.cpu_time_total for event in syncs) / 1000 / steps,
        "host_sync_calls_per_step": sum(event.count for event in syncs) / steps,
    }


class _PhasedOptimizer:
    """The optimiser, its ``zero_grad`` and ``step`` timed as the optimiser phase; the backward is timed between."""

    def __init__(self, optimizer, phases: StepPhases) -> None:
        self._optimizer, self._phases = optimizer, phases

    def __getattr__(self, name: str):  # param_groups (gradient clipping), anything else train_step reads
        return getattr(self._optimizer, name)

    def zero_grad(self, set_to_none: bool = True) -> None:
        self._phases._timed("optimiser", self._optimizer.zero_grad, set_to_none=set_to_none)
        self._phases.begin_backward()

    def step(self) -> None:
        self._phases.end_backward()
        self._phases._timed("optimiser", self._optimizer.step)


class _PhasedSchedule:
    def __init__(self, scheduler, phases: StepPhases) -> None:
        self._scheduler, self._phases = scheduler, phases

    def step(self) -> None:
        self._phases._timed("optimiser", self._scheduler.step)
