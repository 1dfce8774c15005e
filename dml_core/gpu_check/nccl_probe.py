"""Run under ``torchrun --nproc-per-node 1`` by the ``torchrun`` part: the suite's collectives over a real process
group (NCCL on a GPU, gloo on the CPU for the unit test) on one rank.

With one process the trainer never builds a process group (``Process.active`` is false), so ``dml train`` under
torchrun on one GPU does not touch NCCL. This probe joins the group itself and treats its one rank as active
(``OneRankGroup``), so the code paths of a multi-GPU job run for real: the autograd-aware all-gather of
``Sharding.gather`` and its backward, DDP, gradient averaging, ``gather_rows``, broadcasts and object gathers,
and SyncBatchNorm on CUDA. With one rank each must return its input (and the gradient of the plain computation):
a check of the calls themselves (an API missing from this torch, a device the backend refuses), not of the
arithmetic across ranks, which the CPU tests with two gloo processes cover.

Writes ``{"checks": {name: "ok" | "error: ..."}, "backend": ..., "device": ...}`` to the file named by its argument;
exits 1 when a check failed.
"""

from __future__ import annotations

import sys
import traceback
from collections.abc import Callable
from dataclasses import dataclass

import torch
import torch.distributed as dist
from torch import nn

from dml_core.atomic_io import atomic_write_json
from dml_core.training.distributed import Process, Sharding, use_global_batchnorm


@dataclass(frozen=True)
class OneRankGroup(Process):
    """A process of a one-rank group that takes the multi-process paths (collectives, DDP, SyncBatchNorm)."""

    @property
    def active(self) -> bool:
        return True


def _expect(condition: bool, what: str) -> None:
    if not condition:
        raise AssertionError(what)


def _gather_with_gradient(process: Process, device: torch.device) -> None:
    sharding = Sharding(process, (4, 4))
    features = torch.arange(16.0, device=device).reshape(8, 2).requires_grad_(True)
    labels = torch.arange(8, device=device)
    gathered, gathered_labels = sharding.gather(features * 2, labels)
    (gathered**2).sum().backward()
    _expect(torch.equal(gathered, features.detach() * 2), "the all-gather changed the rows")
    _expect(torch.equal(gathered_labels, labels), "the all-gather changed the labels")
    _expect(torch.equal(features.grad, 8 * features.detach()), "the all-gather's backward changed the gradient")


def _ddp_step(process: Process, device: torch.device) -> None:
    torch.manual_seed(0)
    model = nn.Linear(3, 2).to(device)
    wrapped = Sharding(process, (4,)).wrap(model, device)
    wrapped(torch.ones(4, 3, device=device)).sum().backward()
    expected = torch.full((2,), 4.0, device=device)  # d(sum of 4 rows' outputs) / d(bias)
    _expect(torch.equal(model.bias.grad, expected), f"DDP's gradient {model.bias.grad.tolist()}, expected 4s")
    process.average_gradients(model.parameters())
    _expect(torch.equal(model.bias.grad, expected), "averaging one rank's gradients changed them")


def _rows_and_objects(process: Process, device: torch.device) -> None:
    rows = torch.arange(6.0, device=device).reshape(3, 2)
    _expect(torch.equal(process.gather_rows(rows), rows), "gather_rows changed the rows")
    _expect(process.broadcast({"a": 1}) == {"a": 1}, "broadcast changed the object")
    _expect(process.all_gather_objects(5) == [5], "all_gather_objects gave another list")
    model = nn.BatchNorm1d(2).to(device)
    process.sync_buffers(model)
    process.barrier()


def _sync_batchnorm(process: Process, device: torch.device) -> None:
    model = nn.Sequential(nn.Linear(3, 4), nn.BatchNorm1d(4)).to(device)
    how = use_global_batchnorm(model, process, device)
    _expect(isinstance(model[1], nn.SyncBatchNorm), f"BN not converted to SyncBatchNorm ({how})")
    model(torch.randn(6, 3, device=device)).sum().backward()


CHECKS: dict[str, Callable[[Process, torch.device], None]] = {
    "sharded all-gather and its backward": _gather_with_gradient,
    "DDP step and gradient averaging": _ddp_step,
    "gather_rows, broadcast, all_gather_objects, buffers, barrier": _rows_and_objects,
    "SyncBatchNorm": _sync_batchnorm,
}


def main(out_path: str) -> int:
    launched = Process.from_environment()
    process = OneRankGroup(launched.rank, launched.world_size, launched.local_rank)
    device = torch.device("cuda", process.local_rank) if torch.cuda.is_available() else torch.device("cpu")
    backend = "nccl" if device.type == "cuda" else "gloo"
    checks = {}
    try:
        if device.type == "cuda":
            torch.cuda.set_device(device)
            dist.init_process_group(backend, rank=process.rank, world_size=process.world_size, device_id=device)
        else:
            dist.init_process_group(backend, rank=process.rank, world_size=process.world_size)
        for name, check in CHECKS.items():
            if name == "SyncBatchNorm" and device.type != "cuda":
                checks[name] = "not on the CPU (SyncBatchNorm needs CUDA)"
                continue
            try:
                check(process, device)
                checks[name] = "ok"
            except Exception as error:  # every check reports, whatever the others do
                checks[name] = f"error: {type(error).__name__}: {error}"
                traceback.print_exc()
    finally:
        if dist.is_initialized():
            dist.destroy_process_group()
    atomic_write_json(out_path, {"checks": checks, "backend": backend, "device": str(device)})
    return 1 if any(value.startswith("error") for value in checks.values()) else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1]))
