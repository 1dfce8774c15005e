"""Every registered loss, forward and backward, and damlrrm's Prim forest run on the CPU under the CUDA guard: no op
without a CUDA kernel for its dtype, none without a deterministic CUDA implementation, no tensor handed to numpy."""

import pytest
import torch
import torch.nn.functional as F

from dml_core.errors import InputError
from dml_core.losses import LOSSES, build_loss, with_run_values
from dml_core.losses.spanning_tree import class_forest, connectivity, forest_mask, prim_forest
from dml_core.models import RelationalOutput
from tests.cuda_guards.cuda_kernels import CudaGuard

RUN = {"num_classes": 4, "embedding_dim": 6, "group_sizes": (6, 6)}
LABELS = torch.tensor([0, 0, 1, 1, 2, 3] * 2)  # [A | B]: two class-aligned halves, as the two-stream samplers give
PAIRED_ROWS = torch.tensor([0, 0, 1, 1, 2, 2, 3, 3, 0, 0, 1, 1])  # rows 2i and 2i+1 of one class (cgml's "halves")

# Each loss with the options that take other code paths (miners, reductions, samplings, composites' bases).
CONFIGS = {
    "contrastive": [{}, {"reduction": "mean", "distance": "cosine", "power": 2.0}],
    "triplet": [{"mining": "all"}, {"mining": "semihard"}, {"mining": "hard", "distance": "cosine"}],
    "lifted": [{}],
    "generalized_lifted": [{}, {"distance": "euclidean", "pos_anchor": 0.5, "neg_anchor": 0.2}],
    "npair": [{}, {"anchors": "all", "negatives": "all", "scale": 2.0, "offset": 0.1}],
    "binomial": [{}],
    "multi_similarity": [{}, {"epsilon": None, "version": "v2", "distance": "euclidean"}],
    "margin": [{}, {"sampling": "all", "learn_beta": True, "nu": 0.1}],
    "proxy_nca": [{}, {"exclude_positive": False}],
    "proxy_anchor": [{}],
    "ranked_list": [{}, {"detach_weights": False, "temperature_pos": 1.0}],
    "danml": [{}, {"epsilon": None, "lambda1": None, "lambda2": None, "gamma1": 0.0, "link": "hinge"}],
    "improved_proxy_nca": [{}],
    "drml": [
        {"base": "triplet", "num_features": 2},
        {"base": "proxy_anchor", "num_features": 2, "shared_branch_loss": True},
        {"base": "margin", "num_features": 2},
    ],
    "damlrrm": [{}, {"positive_pairs": "all", "shuffled_negatives": "cross_and_within"}],
    "cgml": [
        {"base": "binomial"},
        {"base": "npair", "graphs": "halves", "bandwidth": "median", "form": "frobenius", "base_on": "each"},
    ],
    "graph_consistency": [{"base": "triplet", "graph_on": "normalized"}],
    "gpw_pair": [
        {},
        {"weighting": "exponential", "alpha": 2.0, "beta": 2.0, "epsilon": 0.1, "normalization_scope": "batch"},
    ],
    "gpw_triplet": [{}, {"mining": "hard", "weighting": "power", "p": 1.0}],
}
CASES = [(name, params) for name in sorted(CONFIGS) for params in CONFIGS[name]]


def test_every_registered_loss_is_guarded():
    assert set(CONFIGS) == set(LOSSES)


@pytest.mark.parametrize(("name", "params"), CASES, ids=[f"{name}-{i}" for i, (name, _) in enumerate(CASES)])
def test_forward_and_backward_run_as_cuda_would(name, params):
    torch.manual_seed(0)
    loss = build_loss(name, **with_run_values(name, params, **RUN))
    labels = PAIRED_ROWS if params.get("graphs") == "halves" else LABELS
    embeddings = F.normalize(torch.randn(12, 6), dim=1).requires_grad_(True)
    inputs = embeddings
    if name == "drml":  # the relational head's output around the embeddings; routing splits the batch
        individual = embeddings[:, :6].reshape(12, 2, 3)
        inputs = RelationalOutput(embeddings, individual, torch.rand(12, 2))
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
