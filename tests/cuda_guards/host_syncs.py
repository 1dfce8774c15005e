"""Count, on the CPU, the op calls that make the host wait for a CUDA device (a host sync).

An op syncs when the host needs a value the device computes: a scalar (``item()``, ``int(t)``, ``bool(t)``: aten's
``_local_scalar_dense``, ``is_nonzero``, ``equal``) or an output size that depends on the data (``nonzero``,
``masked_select``, ``unique``, ``repeat_interleave`` with tensor repeats and no ``output_size``, and indexing or
index assignment with a boolean mask, which runs ``nonzero`` inside the kernel). ``HostSyncs`` records each such call
by name; the losses' tests hold their counts per step, so a new sync is a decision, not an accident.
"""

from __future__ import annotations

from collections import Counter

import torch
import torch.nn.functional as F
from torch.overrides import TorchFunctionMode
from torch.utils._python_dispatch import TorchDispatchMode

from tests.cuda_guards.cuda_kernels import argument

ALWAYS = frozenset(
    {"_local_scalar_dense", "is_nonzero", "equal", "nonzero", "masked_select", "unique_consecutive", "_unique2"}
)
BOOLEAN_INDEXING = frozenset({"index", "index_put", "index_put_", "_index_put_impl_"})


def syncs(func: torch._ops.OpOverload, args: tuple, kwargs: dict) -> bool:
    """Whether this call waits for the device on CUDA."""
    packet = func.overloadpacket.__name__
    if packet in ALWAYS:
        return True
    if packet == "repeat_interleave":
        return isinstance(argument(func, args, kwargs, "repeats"), torch.Tensor) and (
            argument(func, args, kwargs, "output_size") is None
        )
    if packet in BOOLEAN_INDEXING:
        indices = argument(func, args, kwargs, "indices") or ()
        return any(index is not None and index.dtype in (torch.bool, torch.uint8) for index in indices)
    return False


class _Counter(TorchDispatchMode):
    def __init__(self) -> None:
        super().__init__()
        self.calls: Counter[str] = Counter()
        self.paused = False

    def __torch_dispatch__(self, func, types, args=(), kwargs=None):
        kwargs = kwargs or {}
        if not self.paused and syncs(func, args, kwargs):
            self.calls[func.overloadpacket.__name__] += 1
        return func(*args, **kwargs)


class _CpuOnlyChecks(TorchFunctionMode):
    """Pauses the count inside ``F.one_hot``: it checks the labels' range (min and max, two scalars) on the CPU only;
    ATen skips those checks on CUDA, where the kernel asserts on the device instead."""

    def __init__(self, counter: _Counter) -> None:
        super().__init__()
        self.counter = counter

    def __torch_function__(self, func, types, args=(), kwargs=None):
        if func is not F.one_hot:
            return func(*args, **(kwargs or {}))
        self.counter.paused = True
        try:
            return func(*args, **(kwargs or {}))
        finally:
            self.counter.paused = False


class HostSyncs:
    """``with HostSyncs() as syncs:``; then ``syncs.calls`` counts the calls that would sync on CUDA, by aten packet."""

    def __init__(self) -> None:
        self._counter = _Counter()
        self._cpu_only = _CpuOnlyChecks(self._counter)

    @property
    def calls(self) -> Counter[str]:
        return self._counter.calls

    @property
    def total(self) -> int:
        return sum(self.calls.values())

    def __enter__(self) -> HostSyncs:
        self._cpu_only.__enter__()
        self._counter.__enter__()
        return self

    def __exit__(self, *exc: object) -> None:
        self._counter.__exit__(*exc)
        self._cpu_only.__exit__(*exc)
