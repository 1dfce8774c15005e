"""The generated table of (op, dtype) pairs CUDA lacks: entries checked by hand, and the whole of it against torch's
op database."""

import pytest

from tests.cuda_guards.cuda_missing_dtypes import MISSING_ON_CUDA
from tests.cuda_guards.op_db_table import derive, load_op_db


def test_hand_checked_entries():
    # Each as CUDA reports it: "cuda_scatter_gather_base_kernel_func" / "addmm_cuda" not implemented for ..., and
    # torch.histogram has no CUDA kernel at all.
    assert MISSING_ON_CUDA["scatter_reduce_"] == {name: ("bool",) for name in ("amax", "amin", "prod")}
    assert {"int64", "int32", "uint8"} <= set(MISSING_ON_CUDA["mm"][""])
    assert {"int64"} <= set(MISSING_ON_CUDA["addmm"][""]) and {"float32", "float64"} <= set(
        MISSING_ON_CUDA["histogram"][""]
    )
    # the float kernels the losses run on exist, and sum / mean scatter_reduce on bool is not listed
    assert "float32" not in MISSING_ON_CUDA["mm"][""] and "sum" not in MISSING_ON_CUDA["scatter_reduce"]
    # answered for an sm_90 GPU, not for this GPU-less machine: bf16 bmm exists there
    assert "bfloat16" not in MISSING_ON_CUDA["bmm"][""]


@pytest.mark.slow
def test_the_table_is_what_torchs_op_database_gives():
    # About ten seconds: the op database is large. Regenerate with `python -m tests.cuda_guards.op_db_table`.
    assert derive(load_op_db()) == MISSING_ON_CUDA
