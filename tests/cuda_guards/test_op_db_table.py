"""The generated table of (op, dtype) pairs CUDA lacks: entries checked by hand, and the whole of it against torch's
op database."""

import subprocess
import sys

import pytest

from tests.cuda_guards.cuda_missing_dtypes import MISSING_ON_CUDA
from tests.cuda_guards.op_db_table import TABLE_FILE


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
    """Derived in a process of its own: loading the database imports torch's internal test utilities, which
    freeze ``torch.backends`` flags for the rest of the process (``disable_global_flags``), and every later run in
    this one would then fail to set its determinism switches. About ten seconds: the database is large."""
    derivation = (
        "from tests.cuda_guards.op_db_table import derive, load_op_db, render; "
        "print(render(derive(load_op_db())), end='')"
    )
    derived = subprocess.run(
        [sys.executable, "-c", derivation], capture_output=True, text=True, check=True, cwd=TABLE_FILE.parents[2]
    ).stdout
    assert derived == TABLE_FILE.read_text(), "regenerate with `python -m tests.cuda_guards.op_db_table`"
