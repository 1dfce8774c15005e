"""The checker itself: it refuses what CUDA refuses, lets ordinary ops through, sees backward ops, and its list of
nondeterministic ops is the installed torch's."""

import re

import numpy as np
import pytest
import torch
import torch.nn.functional as F

from tests.cuda_guards.cuda_kernels import NONDETERMINISTIC_ON_CUDA, CudaGuard, CudaGuardError


def test_a_bool_scatter_reduce_amax_is_refused_for_both_reasons():
    added, chosen = torch.zeros(3, dtype=torch.bool), torch.tensor([0, 0, 2])
    with pytest.raises(CudaGuardError) as refused, CudaGuard():
        added.scatter_reduce_(0, chosen, torch.tensor([True, False, True]), reduce="amax")
    message = str(refused.value)
    assert message.startswith("aten.scatter_reduce_.two on dtypes (bool, int64, bool): ")
    assert "no CUDA kernel for dtype bool (amax)" in message and "no deterministic CUDA implementation" in message


def test_a_missing_kernel_alone_is_refused():
    with pytest.raises(CudaGuardError, match=r"^aten\.mm\.default on dtypes \(int64, int64\): no CUDA kernel for"):
        with CudaGuard():
            torch.ones(2, 2, dtype=torch.int64) @ torch.ones(2, 2, dtype=torch.int64)


@pytest.mark.parametrize(
    ("call", "op"),
    [
        (lambda: torch.histc(torch.rand(10), bins=4), "histc"),
        (lambda: torch.bincount(torch.tensor([0, 1, 1]), weights=torch.ones(3)), "bincount"),
        (lambda: torch.rand(3, 4).median(dim=1), "median"),
        (
            lambda: torch.zeros(3).scatter_reduce(0, torch.tensor([0, 0]), torch.ones(2), reduce="amax"),
            "scatter_reduce",
        ),
    ],
)
def test_ops_without_a_deterministic_cuda_implementation_are_refused(call, op):
    with pytest.raises(CudaGuardError, match=rf"^aten\.{op}\.\w+ on dtypes .*: no deterministic CUDA implementation"):
        with CudaGuard():
            call()


def test_their_deterministic_forms_and_ordinary_ops_pass():
    x = torch.rand(4, 3, requires_grad=True)
    with CudaGuard() as guard:
        torch.bincount(torch.tensor([0, 1, 1]))
        torch.rand(5).median()
        torch.zeros(3).scatter_reduce(0, torch.tensor([0, 0]), torch.ones(2), reduce="sum")
        (torch.cdist(x, x) @ x).sum().backward()
        torch.where(torch.ones(2, dtype=torch.bool), torch.ones(2), torch.zeros(2))
    assert {"bincount", "median", "scatter_reduce", "_cdist_forward", "_cdist_backward", "mm"} <= guard.seen


def test_backward_ops_are_checked_too():
    x = torch.rand(1, 1, 4, 4, requires_grad=True)
    with CudaGuard():
        y = F.interpolate(x, scale_factor=2, mode="bilinear")  # the forward has a deterministic CUDA kernel
        with pytest.raises(CudaGuardError, match=r"^aten\.upsample_bilinear2d_backward\.\w+ on dtypes \(float32"):
            y.sum().backward()


def test_an_allowed_pair_passes_and_only_that_pair():
    allow = {("mm", "int64"): "a CPU-only path"}
    with CudaGuard(allow=allow):
        torch.ones(2, 2, dtype=torch.int64) @ torch.ones(2, 2, dtype=torch.int64)
        with pytest.raises(CudaGuardError, match=r"aten\.mm\.default on dtypes \(int32, int32\)"):
            torch.ones(2, 2, dtype=torch.int32) @ torch.ones(2, 2, dtype=torch.int32)


def test_numpy_is_refused_where_code_must_stay_on_the_device():
    with pytest.raises(CudaGuardError, match=r"^numpy: a tensor handed to numpy without \.cpu\(\)"):
        with CudaGuard(host_only_numpy=True):
            torch.ones(2).numpy()
    with pytest.raises(CudaGuardError, match=r"^__array__: a tensor handed to numpy"), CudaGuard(host_only_numpy=True):
        np.asarray(torch.ones(2) + 1)
    with CudaGuard(host_only_numpy=True):
        x = torch.arange(3.0)
        assert torch.equal(x.cpu(), x) and x.cpu().numpy().tolist() == [0.0, 1.0, 2.0]  # a host copy may go
        assert np.asarray(x.cpu()).tolist() == [0.0, 1.0, 2.0]
    with CudaGuard():  # off by default: the evaluation's host path makes host tensors from numpy by design
        torch.ones(2).numpy()


def _normalised(text: str) -> str:
    return " ".join(text.split())


def _raise_list_bullets() -> list[str]:
    """The bullets of the docstring's list of ops that throw under ``mode=True`` (sub-bullets joined to theirs)."""
    doc = torch.use_deterministic_algorithms.__doc__
    section = doc[
        re.search(r"operations will throw a\s+:class:`RuntimeError`\s+when ``mode=True``:", doc).end() : doc.index(
            "In addition"
        )
    ]
    bullets = re.split(r"\n\s*\* ", section)[1:]
    return [_normalised(bullet) for bullet in bullets]


def test_every_encoded_entry_is_named_by_the_installed_torchs_docstring():
    doc = _normalised(torch.use_deterministic_algorithms.__doc__)
    for entry in NONDETERMINISTIC_ON_CUDA:
        for cite in entry.cites:
            assert cite in doc, f"torch {torch.__version__} no longer says: {cite}"
        for packet in entry.packets:
            assert hasattr(torch.ops.aten, packet), packet


def test_every_cuda_entry_of_the_docstrings_raise_list_is_encoded():
    # A bullet applies to CUDA when it says so or names no device; MPS-only and quantized-only ones do not.
    applies = [b for b in _raise_list_bullets() if "CUDA" in b or not ("MPS" in b or "quantized" in b)]
    assert len(applies) >= 20  # the parse found the list
    cited = {cite for entry in NONDETERMINISTIC_ON_CUDA for cite in entry.cites}
    assert [bullet for bullet in applies if bullet not in cited] == []
