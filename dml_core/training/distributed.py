"""Multi-GPU training with torch.distributed (DDP, launched by torchrun): the recipe's batch is the global batch.

Every rank builds the same sampler and takes one slice of every stream of the batch (``shard_slots``), with the
augmentation seeds a single process would use; the outputs are all-gathered back into recipe order, so the loss sees
exactly the single-process batch and the gradients are exactly those of the global loss. Only rank 0 writes
checkpoints and results (docs/clusters.md).
"""

from __future__ import annotations

import dataclasses
import os
from collections.abc import Iterable
from dataclasses import dataclass
from datetime import timedelta

import numpy as np
import torch
import torch.distributed as dist
import torch.distributed._functional_collectives as functional_collectives
from torch import nn
from torch.nn.parallel import DistributedDataParallel

from dml_core.errors import InputError
from dml_core.models.freezing import batchnorm_layers
from dml_core.training.device_choice import chosen_device, unusable_gpu

# How long the other ranks wait for rank 0's metrics. Rank 0 computes them alone (k-means and NMI over SOP's 60,502
# test embeddings can outlast the default 10-minute collective time-out); the others wait in a CPU (gloo) group of
# their own with this time-out, so the training collectives keep the default one that tells a hung job.
EVALUATION_WAIT = timedelta(hours=6)
_evaluation_group: dist.ProcessGroup | None = None  # made with the job's process group, on every rank


def _all_gather(tensor: torch.Tensor) -> torch.Tensor:
    """torch's autograd-aware all-gather along dim 0 (backward: the ranks' gradients summed into each slice).

    torch 2.11 names it ``all_gather_tensor``; later versions ``all_gather_single`` and keep the old name as a
    deprecated alias that warns at every call, so the new name where there is one."""
    gather = getattr(functional_collectives, "all_gather_single", None) or functional_collectives.all_gather_tensor
    return gather(tensor.contiguous(), 0, dist.group.WORLD)


def shard_slots(group_sizes: Iterable[int], rank: int, world_size: int) -> list[int]:
    """The batch slots rank ``rank`` of ``world_size`` takes: the rank-th equal piece of every stream.

    >>> shard_slots((4, 4), 0, 2), shard_slots((4, 4), 1, 2)
    ([0, 1, 4, 5], [2, 3, 6, 7])
    >>> shard_slots((6,), 2, 3)
    [4, 5]
    """
    sizes = tuple(group_sizes)
    slots, start = [], 0
    for size in sizes:
        if size % world_size:
            raise InputError(
                f"sampler: every stream of the batch must split evenly over the {world_size} processes; "
                f"found a stream of {size} images (streams {sizes}); choose a batch size or "
                f"a number of processes that divides it"
            )
        piece = size // world_size
        slots.extend(range(start + rank * piece, start + (rank + 1) * piece))
        start += size
    return slots


def recipe_order(group_sizes: Iterable[int], world_size: int) -> list[int]:
    """Indices into the rank-by-rank gathered batch that put it back in recipe (single-process) order.

    >>> recipe_order((4, 4), 2)  # gathered: slots 0 1 4 5 | 2 3 6 7
    [0, 1, 4, 5, 2, 3, 6, 7]
    >>> recipe_order((6,), 3)
    [0, 1, 2, 3, 4, 5]
    """
    sizes = tuple(group_sizes)
    gathered = [slot for rank in range(world_size) for slot in shard_slots(sizes, rank, world_size)]
    return np.argsort(gathered, kind="stable").tolist()


@dataclass(frozen=True)
class Process:
    """This process's place in the job: rank, world size and local rank (torchrun's environment variables)."""

    rank: int = 0
    world_size: int = 1
    local_rank: int = 0

    @classmethod
    def from_environment(cls) -> Process:
        """What torchrun (or ``submitit.helpers.TorchDistributedEnvironment().export()``) put in the environment."""
        values = {}
        for name in ("RANK", "WORLD_SIZE", "LOCAL_RANK"):
            text = os.environ.get(name, "")
            if text and not text.isdigit():
                raise InputError(f"environment variable {name}: expected a non-negative integer, found {text!r}")
            values[name] = int(text) if text else None
        world_size = values["WORLD_SIZE"] or 1
        rank = values["RANK"] or 0
        if rank >= world_size:
            raise InputError(f"environment variables RANK={rank}, WORLD_SIZE={world_size}: expected RANK < WORLD_SIZE")
        return cls(rank, world_size, values["LOCAL_RANK"] or 0)

    @property
    def is_main(self) -> bool:
        return self.rank == 0

    @property
    def active(self) -> bool:
        return self.world_size > 1

    def device(self, requested: str | None) -> torch.device:
        """The device this process trains on (``device_choice.chosen_device``: the requested one, else the GPU when
        there is one, else the CPU), always with its index (``cuda:LOCAL_RANK`` under torchrun), made the current
        CUDA device.

        ``cuda`` without an index is the current GPU (one process) or ``cuda:LOCAL_RANK`` (several): torch's
        ``set_device`` and DDP's ``device_ids`` need an index. ``cuda:N`` under torchrun is refused: every process
        would train on the same GPU; which GPUs a job uses is ``CUDA_VISIBLE_DEVICES``'s to say."""
        device = chosen_device(requested)
        if device.type != "cuda":
            return device
        what = f"device {requested!r}" if requested else "the default device 'cuda'"
        if not torch.cuda.is_available():
            unusable = unusable_gpu()  # nvidia-smi lists a GPU: the driver against the wheel's CUDA, what to install
            found = f"none torch can use ({unusable})" if unusable else "none on this machine"
            raise InputError(f"{what}: expected a CUDA GPU, found {found}; pass --device cpu")
        if self.active and device.index is not None:
            raise InputError(
                f"{what}: under torchrun each of the {self.world_size} processes trains on the GPU of its "
                f"LOCAL_RANK, expected 'cuda' without an index (every process would share GPU {device.index}); "
                "choose the job's GPUs with CUDA_VISIBLE_DEVICES"
            )
        if device.index is None:
            # not current_device() under torchrun: it would open a context on GPU 0 in every process
            device = torch.device("cuda", self.local_rank if self.active else torch.cuda.current_device())
        count = torch.cuda.device_count()
        if device.index >= count:
            source = f"LOCAL_RANK {self.local_rank}" if self.active else what
            raise InputError(
                f"{source}: expected a GPU index below {count} (the GPUs this process sees), found {device.index}"
            )
        torch.cuda.set_device(device)
        return device

    def init_process_group(self, device: torch.device) -> bool:
        """Join the job's process group (NCCL on CUDA, bound to this rank's GPU; gloo on the CPU) and make the group
        the ranks wait for rank 0's metrics in (``EVALUATION_WAIT``); return whether this call created them."""
        global _evaluation_group
        if not self.active or dist.is_initialized():
            return False
        if device.type == "cuda":  # device_id: the communicator is this rank's GPU's from the start
            dist.init_process_group("nccl", rank=self.rank, world_size=self.world_size, device_id=device)
        else:
            dist.init_process_group("gloo", rank=self.rank, world_size=self.world_size)
        _evaluation_group = dist.new_group(backend="gloo", timeout=EVALUATION_WAIT)
        return True

    def leave_process_group(self) -> None:
        """Leave the groups ``init_process_group`` made (call where it returned True)."""
        global _evaluation_group
        _evaluation_group = None
        dist.destroy_process_group()

    # --- collectives; with one process each is the identity (or a no-op) ----------------------------------

    def barrier(self) -> None:
        if self.active:
            dist.barrier()

    def broadcast(self, value, *, long_wait: bool = False):
        """Rank 0's ``value`` on every rank (any picklable object). ``long_wait``: the others may wait for it up to
        ``EVALUATION_WAIT`` (rank 0's metrics), not the default collective time-out."""
        if not self.active:
            return value
        box = [value]
        dist.broadcast_object_list(box, src=0, group=_evaluation_group if long_wait else None)
        return box[0]

    def all_gather_objects(self, value) -> list:
        """Every rank's ``value`` (any picklable object), in rank order."""
        if not self.active:
            return [value]
        values = [None] * self.world_size
        dist.all_gather_object(values, value)
        return values

    def gather_rows(self, rows: torch.Tensor) -> torch.Tensor:
        """Concatenate every rank's rows (row counts may differ by rank), in rank order; no gradient."""
        if not self.active:
            return rows
        counts = self.all_gather_objects(len(rows))
        padded = rows.new_zeros((max(counts), *rows.shape[1:]))
        padded[: len(rows)] = rows
        pieces = [torch.empty_like(padded) for _ in counts]
        dist.all_gather(pieces, padded.contiguous())
        return torch.cat([piece[:count] for piece, count in zip(pieces, counts, strict=True)])

    def slice_of(self, length: int) -> range:
        """This rank's contiguous share of ``length`` items (the first ranks take one more when uneven)."""
        share, extra = divmod(length, self.world_size)
        start = self.rank * share + min(self.rank, extra)
        return range(start, start + share + (self.rank < extra))

    def sync_buffers(self, model: nn.Module) -> None:
        """Rank 0's buffers (BN running statistics) on every rank, so all ranks embed with the same model."""
        if self.active:
            for buffer in model.buffers():
                dist.broadcast(buffer, src=0)

    def average_gradients(self, parameters: Iterable[nn.Parameter]) -> None:
        """Average the gradients of parameters DDP does not own (the loss's proxies) over the ranks: they see the same
        loss on every rank, but averaging keeps float noise from letting the ranks drift apart.

        Every rank computes the same global loss, so which of them have a gradient is the same on every rank."""
        if not self.active:
            return
        for parameter in parameters:
            if parameter.grad is not None:
                dist.all_reduce(parameter.grad)  # a sum: gloo has no average
                parameter.grad.div_(self.world_size)


SINGLE_PROCESS = Process()


class Sharding:
    """One process's share of every global batch, and the way back to the global batch for the loss."""

    def __init__(self, process: Process, group_sizes: Iterable[int]) -> None:
        sizes = tuple(int(size) for size in group_sizes)
        self.process = process
        self.slots = shard_slots(sizes, process.rank, process.world_size)
        self.order = torch.as_tensor(recipe_order(sizes, process.world_size))  # moved to the data's device once

    def _gather_tensor(self, tensor: torch.Tensor) -> torch.Tensor:
        gathered = functional_collectives.wait_tensor(_all_gather(tensor))
        if self.order.device != gathered.device:
            self.order = self.order.to(gathered.device)
        return gathered.index_select(0, self.order)

    def gather(self, output, labels: torch.Tensor):
        """The global batch's model output and labels in recipe order (unchanged with one process).

        The all-gather's backward sums the W ranks' gradients into the owning rank's slice (W x dL/dx_r, since every
        rank computes the same global loss); DDP then averages parameter gradients over ranks, which gives exactly
        dL/dtheta of the global loss.

        ``output`` is a batch-first tensor or a dataclass of batch-first tensors (DRML's ``RelationalOutput``)."""
        if not self.process.active:
            return output, labels
        if isinstance(output, torch.Tensor):
            gathered = self._gather_tensor(output)
        elif dataclasses.is_dataclass(output):
            fields = {
                field.name: self._gather_tensor(getattr(output, field.name)) for field in dataclasses.fields(output)
            }
            gathered = dataclasses.replace(output, **fields)
        else:
            raise TypeError(f"cannot gather a model output of type {type(output).__name__} across processes")
        return gathered, self._gather_tensor(labels)

    def wrap(self, model: nn.Module, device: torch.device) -> nn.Module:
        """The model as DDP sees it (the model itself with one process). Call again whenever which parameters
        train changes (the warm-up freeze): DDP fixes its set of gradient-synchronised parameters when built."""
        if not self.process.active:
            return model
        return DistributedDataParallel(model, device_ids=[device.index] if device.type == "cuda" else None)


def use_global_batchnorm(model: nn.Module, process: Process, device: torch.device) -> str:
    """Make BN statistics those of the global batch where torch can (SyncBatchNorm, multi-GPU CUDA jobs);
    return how BN batch statistics are computed, for the results file (``distributed.batchnorm_statistics``).
    SyncBatchNorm does not run on the CPU, so CPU (gloo) runs keep per-rank statistics. Call before building the
    optimiser."""
    if not batchnorm_layers(model):
        return "no batch normalisation"
    if not process.active:
        return "global batch (one process)"
    if device.type != "cuda":
        return "per rank (SyncBatchNorm needs CUDA); frozen layers use running statistics"
    for name, child in list(model.named_children()):  # in place: the model object (and its type) stays
        setattr(model, name, nn.SyncBatchNorm.convert_sync_batchnorm(child))
    return "global batch (SyncBatchNorm); frozen layers use running statistics"
