"""The step's phases: the wrapped step computes what the trainer's computes, each phase's range holds that phase's
ops (read from a CPU profile, as a GPU's would be), and the backbone bound's loss reaches every output."""

import dataclasses
from types import SimpleNamespace

import torch
from torch import nn
from torch.autograd import DeviceType
from torch.profiler import ProfilerActivity, profile

from dml_core.gpu_check.experiments.overhead import mean_of_outputs
from dml_core.recipes.settings import TrainingSettings
from dml_core.training.step import train_step
from tests.benchmarks.step_phases import PHASES, RANGE_PREFIX, StepPhases, profiled_ms_per_step
from tests.cuda_guards.host_syncs import HostSyncs


def tiny_run(seed: int = 0):
    torch.manual_seed(seed)
    model = nn.Sequential(nn.Linear(4, 8), nn.ReLU(), nn.Linear(8, 3))
    optimizer = torch.optim.SGD(model.parameters(), lr=0.1, momentum=0.9)
    scheduler = torch.optim.lr_scheduler.StepLR(optimizer, step_size=1, gamma=0.5)
    return model, optimizer, scheduler


def loss(output, labels):
    return nn.functional.cross_entropy(output, labels)


IMAGES, LABELS = torch.randn(6, 4, generator=torch.Generator().manual_seed(1)), torch.tensor([0, 1, 2, 0, 1, 2])
SETTINGS = TrainingSettings(iterations=2, grad_clip_norm=1.0)


def test_the_phased_step_trains_exactly_as_the_trainers_step():
    model, optimizer, scheduler = tiny_run()
    phases = StepPhases(torch.device("cpu"))
    for _ in range(2):
        train_step(*phases.wrap(model, loss, optimizer, scheduler), IMAGES, LABELS, SETTINGS)
    plain, plain_optimizer, plain_scheduler = tiny_run()
    for _ in range(2):
        train_step(plain, loss, plain_optimizer, plain_scheduler, IMAGES, LABELS, SETTINGS)
    for ours, theirs in zip(model.parameters(), plain.parameters(), strict=True):
        assert torch.equal(ours, theirs)
    assert scheduler.get_last_lr() == plain_scheduler.get_last_lr() == [0.025]
    report = phases.report(2)
    assert report["method"] == "wall clocks" and list(report["host_ms_per_step"]) == list(PHASES)


def range_ops(prof, name: str) -> set[str]:
    """The names of the ops run directly or indirectly inside the range ``name``."""
    found = set()

    def collect(event):
        for child in event.cpu_children:
            found.add(child.name)
            collect(child)

    for event in prof.events():
        if event.name == RANGE_PREFIX + name:
            collect(event)
    return found


def test_each_phase_range_holds_its_phases_ops():
    model, optimizer, scheduler = tiny_run()
    phases = StepPhases(torch.device("cpu"))
    with profile(activities=[ProfilerActivity.CPU]) as prof:
        with phases.phase("data_wait"):
            images = IMAGES.clone()
        train_step(*phases.wrap(model, loss, optimizer, scheduler), images, LABELS, SETTINGS)
    assert "aten::clone" in range_ops(prof, "data_wait")
    assert "aten::linear" in range_ops(prof, "forward") and "aten::linear" not in range_ops(prof, "loss")
    assert "aten::cross_entropy_loss" in range_ops(prof, "loss")
    backward = range_ops(prof, "backward")  # on the CPU autograd runs on the calling thread, inside the range
    assert any(op.startswith("autograd::engine::evaluate_function") for op in backward)
    assert "aten::linalg_vector_norm" in backward  # the gradient clipping's norm
    assert "Optimizer.step#SGD.step" in range_ops(prof, "optimiser")
    profiled = profiled_ms_per_step(prof.key_averages(), 1)  # a CPU profile: no device time, no CUDA syncs
    assert set(profiled["device_ms_per_step"]) == {*PHASES, "outside_the_phases"}
    assert profiled["host_sync_ms_per_step"] == 0 and profiled["host_sync_calls_per_step"] == 0


@dataclasses.dataclass
class TwoOutputs:
    embedding: torch.Tensor
    error: torch.Tensor
    branch: torch.Tensor


def test_the_bound_loss_is_the_mean_of_every_floating_output():
    embedding, error = torch.ones(2, 3, requires_grad=True), torch.full((2,), 3.0, requires_grad=True)
    value = mean_of_outputs(TwoOutputs(embedding, error, torch.tensor([1, 0])), torch.zeros(2))
    value.backward()
    assert value.item() == 4.0
    assert torch.equal(embedding.grad, torch.full((2, 3), 1 / 6)) and torch.equal(error.grad, torch.full((2,), 0.5))


def test_host_syncs_are_counted_in_the_forward_loss_and_backward_only():
    def masked_loss(output, labels):  # boolean-mask indexing: a data-dependent size, a sync on CUDA
        kept = labels > 0
        return nn.functional.cross_entropy(output[kept], labels[kept])

    def adam_run():
        model, _, _ = tiny_run()
        optimizer = torch.optim.Adam(model.parameters(), lr=0.1)  # reads its step counts, host tensors, per parameter
        return model, optimizer, torch.optim.lr_scheduler.StepLR(optimizer, step_size=1)

    model, optimizer, scheduler = adam_run()
    with HostSyncs() as everything:
        train_step(model, masked_loss, optimizer, scheduler, IMAGES, LABELS, SETTINGS)
    model, optimizer, scheduler = adam_run()
    counted = StepPhases(torch.device("cpu"), count_host_syncs=True)
    train_step(*counted.wrap(model, masked_loss, optimizer, scheduler), IMAGES, LABELS, SETTINGS)
    assert everything.calls["_local_scalar_dense"] > 0  # the optimiser's reads, left out of the phases' count
    assert dict(counted.host_syncs) == {"index": 2, "index_put": 1}  # the two masks, the backward of one


def event(key, device_type=DeviceType.CPU, device=0.0, self_device=0.0, cpu=0.0, count=1, annotation=False):
    fields = {"key": key, "device_type": device_type, "is_user_annotation": annotation, "count": count}
    times = {"device_time_total": device, "self_device_time_total": self_device, "cpu_time_total": cpu}
    return SimpleNamespace(**fields, **times)


def test_a_gpu_profile_counts_each_kernel_once():
    # Two steps as a CUDA profile's key_averages() gives them (microseconds): each range on the host (its kernels'
    # time) and its span on the GPU (same name, a user annotation); the kernels' own events; backward ops from
    # autograd's device thread; the host's synchronisations.
    averages = [
        event("dml::forward", device=3000.0, cpu=800.0),
        event("dml::forward", DeviceType.CUDA, device=3500.0, self_device=3500.0, annotation=True),
        event("dml::loss", device=400.0),
        event("dml::optimiser", device=600.0),
        event("dml::backward", device=0.0, cpu=900.0),  # the main thread waits; the kernels run from autograd's
        event("autograd::engine::evaluate_function: AddmmBackward0", device=5000.0),
        event("autograd::engine::evaluate_function: torch::autograd::AccumulateGrad", device=1000.0),
        event("aten::addmm", device=3000.0, self_device=3000.0),  # a host op: its kernels are its self time
        event("void gemm_kernel", DeviceType.CUDA, device=9000.0, self_device=9000.0),
        event("void elementwise_kernel", DeviceType.CUDA, device=1200.0, self_device=1200.0),
        event("cudaStreamSynchronize", cpu=300.0, count=4),
        event("cudaDeviceSynchronize", cpu=100.0, count=2),
    ]
    profiled = profiled_ms_per_step(averages, 2)
    assert profiled["device_ms_per_step"] == {
        "data_wait": 0.0,
        "forward": 1.5,
        "loss": 0.2,
        "optimiser": 0.3,
        "backward": 3.0,
        "outside_the_phases": (10200 - 3000 - 400 - 600 - 6000) / 1000 / 2,  # the kernels, less the phases'
    }
    assert profiled["host_sync_ms_per_step"] == 0.2 and profiled["host_sync_calls_per_step"] == 3
