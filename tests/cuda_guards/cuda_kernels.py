"""The CUDA guard: run code on the CPU and refuse every op call that would fail, or lose determinism, on a GPU.

CI and the development machines have no GPU, so a CPU test must catch what only CUDA would reject. ``CudaGuard`` is a
context manager; inside it every aten op (forward and backward: the autograd engine dispatches backward ops through
the same modes) is checked before it runs, and ``CudaGuardError`` names the op, its dtypes and the reason when it is

- an (op, dtype) pair with no CUDA kernel: ``cuda_missing_dtypes.MISSING_ON_CUDA``, derived from torch's op database
  (``op_db_table`` says how and why it is a generated file);
- an op that raises under ``torch.use_deterministic_algorithms(True)`` on CUDA (a warning under the trainer's
  ``warn_only=True``, and a run that no longer repeats itself): ``NONDETERMINISTIC_ON_CUDA``, encoded from the
  docstring of ``torch.use_deterministic_algorithms`` (``test_checker.py`` checks that the installed torch's docstring
  still names every entry, and that every CUDA entry of its list is encoded here);
- with ``host_only_numpy=True``, a tensor handed to numpy (``Tensor.numpy`` / ``__array__``) that is not a host copy
  made by ``.cpu()``: on CUDA that raises. For code whose tensors all live on the device (the losses, the evaluation's
  torch path); code that makes host tensors from numpy itself would be refused for those too.

What it cannot see: a Python branch on ``tensor.device`` that takes another path on CUDA (torchvision's resize keeps
uint8 on the CPU only), and ops without an OpInfo (their CUDA dtype gaps are unknown here). ``allow`` exempts named
(op, dtype) pairs for such a CPU-only path, each with its reason; the test that uses it shows the reason holds.
"""

from __future__ import annotations

import weakref
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

import torch
from torch.overrides import TorchFunctionMode
from torch.utils._python_dispatch import TorchDispatchMode
from torch.utils._pytree import tree_leaves

from tests.cuda_guards.cuda_missing_dtypes import MISSING_ON_CUDA


class CudaGuardError(RuntimeError):
    """An op call that CUDA would refuse, or run nondeterministically."""


def argument(func: torch._ops.OpOverload, args: tuple, kwargs: Mapping[str, Any], name: str) -> Any:
    """The value of the schema argument ``name`` in this call (positional, keyword or its default)."""
    for position, schema_arg in enumerate(func._schema.arguments):
        if schema_arg.name == name:
            if position < len(args):
                return args[position]
            return kwargs.get(name, schema_arg.default_value if schema_arg.has_default_value() else None)
    return None


def _always(func, args, kwargs) -> bool:
    return True


@dataclass(frozen=True)
class Nondeterministic:
    """Ops that ``use_deterministic_algorithms(True)`` refuses on CUDA, as the docstring bullets ``cites`` say."""

    packets: tuple[str, ...]  # aten overload packets, e.g. "histc"; backward ops where only the backward is refused
    cites: tuple[str, ...]  # the docstring's words for it (whitespace-normalised), the first one from its raise list
    when: Callable[[torch._ops.OpOverload, tuple, Mapping[str, Any]], bool] = _always


def _reduce_not_sum_or_mean(func, args, kwargs) -> bool:
    return argument(func, args, kwargs, "reduce") not in ("sum", "mean")


def _with_weights(func, args, kwargs) -> bool:
    return argument(func, args, kwargs, "weights") is not None


def _with_indices(func, args, kwargs) -> bool:
    return func._overloadname != "default"  # median.dim and its out form return indices; median() does not


def _max_mode(func, args, kwargs) -> bool:
    return argument(func, args, kwargs, "mode") == 2  # EmbeddingBag's modes: 0 sum, 1 mean, 2 max


def _differentiate(module: str) -> str:
    return f":class:`torch.nn.{module}` when attempting to differentiate a CUDA tensor"


# The CUDA entries of the docstring's "will throw a RuntimeError when mode=True" list (torch 2.15), as aten ops.
NONDETERMINISTIC_ON_CUDA: tuple[Nondeterministic, ...] = (
    Nondeterministic(("avg_pool3d_backward",), (_differentiate("AvgPool3d"),)),
    Nondeterministic(("_adaptive_avg_pool2d_backward",), (_differentiate("AdaptiveAvgPool2d"),)),
    Nondeterministic(("_adaptive_avg_pool3d_backward",), (_differentiate("AdaptiveAvgPool3d"),)),
    Nondeterministic(("adaptive_max_pool2d_backward",), (_differentiate("AdaptiveMaxPool2d"),)),
    Nondeterministic(("fractional_max_pool2d_backward",), (_differentiate("FractionalMaxPool2d"),)),
    Nondeterministic(("fractional_max_pool3d_backward",), (_differentiate("FractionalMaxPool3d"),)),
    # F.max_unpool1d runs max_unpool2d on an unsqueezed input.
    Nondeterministic(("max_unpool2d",), (":class:`torch.nn.MaxUnpool1d`", ":class:`torch.nn.MaxUnpool2d`")),
    Nondeterministic(("max_unpool3d",), (":class:`torch.nn.MaxUnpool3d`",)),
    Nondeterministic(
        (
            "upsample_linear1d_backward",
            "upsample_bilinear2d_backward",
            "upsample_bicubic2d_backward",
            "upsample_trilinear3d_backward",
            "_upsample_bilinear2d_aa_backward",  # antialiased bilinear / bicubic are those modes too
            "_upsample_bicubic2d_aa_backward",
        ),
        (
            ":func:`torch.nn.functional.interpolate` when attempting to differentiate a CUDA tensor and one of the "
            "following modes is used: - ``linear`` - ``bilinear`` - ``bicubic`` - ``trilinear``",
        ),
    ),
    Nondeterministic(("reflection_pad1d_backward",), (_differentiate("ReflectionPad1d"),)),
    Nondeterministic(("reflection_pad2d_backward",), (_differentiate("ReflectionPad2d"),)),
    Nondeterministic(("reflection_pad3d_backward",), (_differentiate("ReflectionPad3d"),)),
    Nondeterministic(
        ("nll_loss_forward", "nll_loss2d_forward"), (":class:`torch.nn.NLLLoss` when called on a CUDA tensor",)
    ),
    Nondeterministic(("_ctc_loss_backward",), (_differentiate("CTCLoss"),)),
    Nondeterministic(
        ("_embedding_bag_backward", "_embedding_bag_dense_backward"),
        (_differentiate("EmbeddingBag") + " when ``mode='max'``",),
        _max_mode,
    ),
    Nondeterministic(
        ("put", "put_"),
        (
            ":func:`torch.Tensor.put_` when ``accumulate=False``",
            ":func:`torch.Tensor.put_` when ``accumulate=True`` and called on a CUDA tensor",
        ),
    ),
    Nondeterministic(("histc",), (":func:`torch.histc` when called on a CUDA tensor",)),
    Nondeterministic(
        ("bincount",),
        (":func:`torch.bincount` when called on a CUDA tensor and ``weights`` tensor is given",),
        _with_weights,
    ),
    Nondeterministic(
        ("median",), (":func:`torch.median` with indices output when called on a CUDA tensor",), _with_indices
    ),
    Nondeterministic(
        ("grid_sampler_2d_backward", "grid_sampler_3d_backward"),
        (":func:`torch.nn.functional.grid_sample` when attempting to differentiate a CUDA tensor",),
    ),
    Nondeterministic(
        ("scatter_reduce", "scatter_reduce_"),
        (
            ":func:`torch.Tensor.scatter_reduce` when called on CUDA or MPS tensor",
            # the other list: sum and mean have a deterministic CUDA implementation
            ":func:`torch.Tensor.scatter_reduce` when ``reduce='sum'`` or ``reduce='mean'`` and called on CUDA tensor",
        ),
        _reduce_not_sum_or_mean,
    ),
)
_NONDETERMINISTIC = {packet: entry for entry in NONDETERMINISTIC_ON_CUDA for packet in entry.packets}


def _dtype_name(dtype: torch.dtype) -> str:
    return str(dtype).removeprefix("torch.")


def cuda_problems(func: torch._ops.OpOverload, args: tuple, kwargs: Mapping[str, Any]) -> list[str]:
    """Why CUDA would refuse (or run nondeterministically) this call; empty when it would run it as the CPU does.

    The dtype an OpInfo speaks of is its sample input's: the first tensor argument (``self``).
    """
    packet = func.overloadpacket.__name__
    problems = []
    entry = _NONDETERMINISTIC.get(packet)
    if entry is not None and entry.when(func, args, kwargs):
        problems.append(f"no deterministic CUDA implementation ({entry.cites[0]})")
    leaves = tree_leaves((args, kwargs))
    tensors = [leaf for leaf in leaves if isinstance(leaf, torch.Tensor)]
    if tensors and packet in MISSING_ON_CUDA:
        strings = {leaf for leaf in leaves if isinstance(leaf, str)}
        dtype = _dtype_name(tensors[0].dtype)
        for variant, missing in MISSING_ON_CUDA[packet].items():
            if (not variant or variant in strings) and dtype in missing:
                shown = f" ({variant})" if variant else ""
                problems.append(f"no CUDA kernel for dtype {dtype}{shown} (torch's op database)")
                break
    return problems


class _KernelCheck(TorchDispatchMode):
    def __init__(self, allow: Mapping[tuple[str, str], str]) -> None:
        super().__init__()
        self.allow = allow
        self.seen: set[str] = set()  # aten packets that ran, for tests that show an op was exercised

    def __torch_dispatch__(self, func, types, args=(), kwargs=None):
        kwargs = kwargs or {}
        packet = func.overloadpacket.__name__
        self.seen.add(packet)
        problems = cuda_problems(func, args, kwargs)
        if problems:
            tensors = [leaf for leaf in tree_leaves((args, kwargs)) if isinstance(leaf, torch.Tensor)]
            dtypes = [_dtype_name(t.dtype) for t in tensors]
            if (packet, dtypes[0] if dtypes else "") not in self.allow:
                raise CudaGuardError(f"{func} on dtypes ({', '.join(dtypes)}): {'; '.join(problems)}")
        return func(*args, **kwargs)


class _NumpyCheck(TorchFunctionMode):
    """Refuses numpy for any tensor but a host copy made by ``.cpu()`` (on the CPU ``.cpu()`` returns the tensor itself,
    so here it returns a fresh view, remembered as the host copy it would be on CUDA)."""

    def __init__(self) -> None:
        super().__init__()
        self.host_copies: weakref.WeakValueDictionary[int, torch.Tensor] = weakref.WeakValueDictionary()

    def __torch_function__(self, func, types, args=(), kwargs=None):
        if func in (torch.Tensor.numpy, torch.Tensor.__array__) and self.host_copies.get(id(args[0])) is not args[0]:
            raise CudaGuardError(
                f"{func.__name__}: a tensor handed to numpy without .cpu() (a CUDA tensor raises there)"
            )
        result = func(*args, **(kwargs or {}))
        if func is torch.Tensor.cpu:
            result = result.view_as(result)
            self.host_copies[id(result)] = result
        return result


class CudaGuard:
    """``with CudaGuard() as guard:`` runs the block under the checks above; ``guard.seen`` holds the aten packets
    that ran. ``allow`` maps (packet, dtype of the first tensor) to the reason that pair is a CPU-only path."""

    def __init__(self, allow: Mapping[tuple[str, str], str] | None = None, host_only_numpy: bool = False) -> None:
        self._kernels = _KernelCheck(dict(allow or {}))
        self._numpy = _NumpyCheck() if host_only_numpy else None

    @property
    def seen(self) -> set[str]:
        return self._kernels.seen

    def __enter__(self) -> CudaGuard:
        if self._numpy is not None:
            self._numpy.__enter__()
        self._kernels.__enter__()
        return self

    def __exit__(self, *exc: object) -> None:
        self._kernels.__exit__(*exc)
        if self._numpy is not None:
            self._numpy.__exit__(*exc)
