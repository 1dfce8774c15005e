"""The exact kNN search's TF32 switch (``evaluation.knn.exact_fp32_matmul``) under torch's two TF32 APIs: it must
work whichever one set the precision before, and leave it as it found it."""

import pytest
import torch

from dml_core.evaluation.knn import exact_fp32_matmul


@pytest.fixture
def precision_kept():
    """The process's TF32 settings as they were before the test (they are global)."""
    generic, matmul = torch.backends.fp32_precision, torch.backends.cuda.matmul.fp32_precision
    yield
    torch.backends.fp32_precision, torch.backends.cuda.matmul.fp32_precision = generic, matmul


@pytest.mark.parametrize("matmul_before", ["none", "tf32", "ieee"])
def test_the_switch_works_after_the_new_api_set_tf32_and_restores_it(precision_kept, matmul_before):
    torch.backends.fp32_precision = "tf32"  # the new API: the legacy allow_tf32 can no longer be read
    torch.backends.cuda.matmul.fp32_precision = matmul_before
    effective = torch.backends.cuda.matmul.fp32_precision  # "none" reads as the generic setting it inherits
    with exact_fp32_matmul():
        assert torch.backends.cuda.matmul.fp32_precision == "ieee"
    assert torch.backends.cuda.matmul.fp32_precision == effective
    assert torch.backends.fp32_precision == "tf32"


def test_the_switch_works_after_the_legacy_api_allowed_tf32_and_restores_it(precision_kept):
    torch.backends.cuda.matmul.allow_tf32 = True
    with exact_fp32_matmul():
        assert torch.backends.cuda.matmul.fp32_precision == "ieee"
    assert torch.backends.cuda.matmul.allow_tf32
