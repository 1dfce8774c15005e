"""Every registered loss, forward and backward, and damlrrm's Prim forest run on the CPU under the CUDA guard: no op
without a CUDA kernel for its dtype, none without a deterministic CUDA implementation, no tensor handed to numpy."""

import pytest
import torch
import torch.nn.functional as F

from dml_core.errors import InputError
from dml_core.losses import LOSSES, build_loss
from dml_core.losses.spanning_tree import class_forest, connectivity, forest_mask, prim_forest
from tests.cuda_guards.cuda_kernels import CudaGuard
from tests.cuda_guards.loss_cases import CASE_IDS, CASES, CONFIGS, LABELS, loss_and_batch


def test_every_registered_loss_is_guarded():
    assert set(CONFIGS) == set(LOSSES)


@pytest.mark.parametrize(("name", "params"), CASES, ids=CASE_IDS)
def test_forward_and_backward_run_as_cuda_would(name, params):
    loss, inputs, labels, embeddings = loss_and_batch(name, params)
    with CudaGuard(host_only_numpy=True):
        value = loss(inputs, labels)
    with CudaGuard(host_only_numpy=True) as backward:
        value.backward()
    assert torch.isfinite(value) and embeddings.grad is not None
    assert backward.seen  # the backward's ops were dispatched through the guard


def test_the_prim_forest_runs_as_cuda_would():
    distances = torch.cdist(*(torch.randn(12, 4, generator=torch.Generator().manual_seed(1)),) * 2)
    with CudaGuard(host_only_numpy=True):
        parent = class_forest(distances, LABELS)
        general = prim_forest(distances.masked_fill(distances > 2.5, float("inf")))
        mask = forest_mask(parent)
        connected = connectivity(torch.isfinite(distances) | torch.eye(12, dtype=torch.bool))
    assert int((parent < 0).sum()) == 4 and int(mask.sum()) == 8  # one tree per class: 4 roots, 12 - 4 edges
    assert general.shape == (12,) and bool(connected.all())


class _ReportsCuda(torch.Tensor):
    """CPU values that say they live on CUDA: what a ``tensor.device`` branch would see there."""

    @property
    def device(self) -> torch.device:
        return torch.device("cuda", 0)


@pytest.mark.parametrize("graphs", ["two_batches", "halves"])
def test_cgml_checks_the_graphs_alignment_on_every_device(graphs):
    loss = build_loss("cgml", base="binomial", graphs=graphs, group_sizes=(6, 6))
    misaligned = torch.tensor([0, 1, 1, 0, 2, 2, 3, 3, 0, 0, 1, 1]).as_subclass(_ReportsCuda)
    assert misaligned[:6].device.type == "cuda"
    with pytest.raises(InputError, match=r"^cgml: the two graphs are not class-aligned"):
        loss.split_graphs(F.normalize(torch.randn(12, 6), dim=1), misaligned)
