"""The losses' cases the CUDA guards run: every registered loss with the options that take other code paths, and the
small batch each runs on."""

import torch
import torch.nn.functional as F

from dml_core.losses import build_loss, with_run_values
from dml_core.models import RelationalOutput

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
CASE_IDS = [f"{name}-{sum(n == name for n, _ in CASES[:i])}" for i, (name, _) in enumerate(CASES)]


def loss_and_batch(name: str, params: dict) -> tuple[torch.nn.Module, object, torch.Tensor, torch.Tensor]:
    """The built loss, its forward's input, the labels, and the embeddings (a leaf that collects the gradient)."""
    torch.manual_seed(0)
    loss = build_loss(name, **with_run_values(name, params, **RUN))
    labels = PAIRED_ROWS if params.get("graphs") == "halves" else LABELS
    embeddings = F.normalize(torch.randn(12, 6), dim=1).requires_grad_(True)
    inputs = embeddings
    if name == "drml":  # the relational head's output around the embeddings; routing splits the batch
        individual = embeddings[:, :6].reshape(12, 2, 3)
        inputs = RelationalOutput(embeddings, individual, torch.rand(12, 2))
    return loss, inputs, labels, embeddings
