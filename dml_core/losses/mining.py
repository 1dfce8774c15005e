"""Miners: pure functions of (dissimilarity matrix, labels) that return index tensors.

Every miner takes ``dissim``, an (N, N) matrix where smaller means closer (a distance, or a negated
similarity: ``base.as_dissimilarity``). Nothing here needs gradients: callers pass detached matrices or
the miners detach them. Triplets are ``(anchor, positive, negative)`` index tensors; pairs are
``(anchor_pos, positive, anchor_neg, negative)`` as in pytorch-metric-learning.
"""

from __future__ import annotations

import torch
from torch import Tensor

from dml_core.losses.base import label_masks

TripletIndices = tuple[Tensor, Tensor, Tensor]
PairIndices = tuple[Tensor, Tensor, Tensor, Tensor]


def all_triplets(labels: Tensor) -> TripletIndices:
    """Every valid triplet (a, p, n): y_a = y_p, a != p, y_a != y_n.

    >>> [t.tolist() for t in all_triplets(torch.tensor([0, 0, 1]))]
    [[0, 1], [1, 0], [2, 2]]
    """
    pos, neg = label_masks(labels)
    return torch.nonzero(pos.unsqueeze(2) & neg.unsqueeze(1), as_tuple=True)


def semihard_triplets(dissim: Tensor, labels: Tensor, margin: float) -> TripletIndices:
    """Semi-hard triplets (FaceNet, Schroff et al. 2015): d_ap < d_an <= d_ap + margin.

    FaceNet draws one semi-hard negative per anchor-positive pair; like pytorch-metric-learning's
    ``TripletMarginMiner(type_of_triplets="semihard")`` this returns *all* of them, which is deterministic.
    """
    dissim = dissim.detach()
    pos, neg = label_masks(labels)
    gap = dissim.unsqueeze(1) - dissim.unsqueeze(2)  # gap[a, p, n] = d_an - d_ap
    keep = pos.unsqueeze(2) & neg.unsqueeze(1) & (gap > 0) & (gap <= margin)
    return torch.nonzero(keep, as_tuple=True)


def hard_triplets(dissim: Tensor, labels: Tensor) -> TripletIndices:
    """Batch-hard triplets (Hermans et al. 2017): per anchor its farthest positive and nearest negative.

    Anchors without a positive or without a negative in the batch give no triplet.
    """
    dissim = dissim.detach()
    pos, neg = label_masks(labels)
    hardest_pos = dissim.masked_fill(~pos, float("-inf")).argmax(dim=1)
    hardest_neg = dissim.masked_fill(~neg, float("inf")).argmin(dim=1)
    anchors = torch.nonzero(pos.any(dim=1) & neg.any(dim=1), as_tuple=True)[0]
    return anchors, hardest_pos[anchors], hardest_neg[anchors]


TRIPLET_MINERS = ("all", "semihard", "hard")


def multi_similarity_pairs(dissim: Tensor, labels: Tensor, epsilon: float) -> PairIndices:
    """Multi-similarity pair mining (Wang et al. 2019, Eqs. 5-6), written for a dissimilarity.

    In similarity terms: keep a negative k of anchor i when S_ik + eps > min_{y_j = y_i} S_ij, and a
    positive j when S_ij - eps < max_{y_k != y_i} S_ik. An anchor without negatives keeps no positives
    and one without positives keeps no negatives.
    """
    dissim = dissim.detach()
    pos, neg = label_masks(labels)
    nearest_neg = dissim.masked_fill(~neg, float("inf")).amin(dim=1, keepdim=True)
    farthest_pos = dissim.masked_fill(~pos, float("-inf")).amax(dim=1, keepdim=True)
    hard_pos = pos & (dissim + epsilon > nearest_neg)
    hard_neg = neg & (dissim - epsilon < farthest_pos)
    a1, p = torch.nonzero(hard_pos, as_tuple=True)
    a2, n = torch.nonzero(hard_neg, as_tuple=True)
    return a1, p, a2, n


def distance_weighted_probabilities(
    distances: Tensor,
    labels: Tensor,
    embedding_dim: int,
    cutoff: float = 0.5,
    nonzero_loss_cutoff: float = 1.4,
) -> Tensor:
    """Per-anchor negative-sampling probabilities of distance-weighted sampling (Wu et al. 2017, Sec. 4).

    On the unit sphere in R^n, pairwise distances follow q(d) ∝ d^(n-2) (1 - d^2/4)^((n-3)/2); a negative
    at distance d is drawn with probability ∝ 1/q(d), with d clamped below at ``cutoff`` (variance) and
    weight 0 beyond ``nonzero_loss_cutoff`` (such negatives give no loss). Rows sum to 1 over negatives;
    an anchor whose negatives all lie beyond the cutoff falls back to uniform over its negatives (as the
    authors' code does); an anchor without negatives gets a zero row. ``distances`` must be Euclidean
    distances between L2-normalised embeddings.
    """
    d = distances.detach().clamp(min=cutoff, max=2.0)
    n = float(embedding_dim)
    # 1 - d^2/4 is 0 at antipodes; clamp keeps the log finite (those points sit beyond any sane cutoff).
    log_q = (n - 2.0) * torch.log(d) + ((n - 3.0) / 2.0) * torch.log((1.0 - 0.25 * d * d).clamp(min=1e-8))
    _, neg = label_masks(labels)
    eligible = neg & (distances.detach() < nonzero_loss_cutoff)
    weighted = eligible & eligible.any(dim=1, keepdim=True)
    uniform = neg & ~eligible.any(dim=1, keepdim=True)
    probs = torch.where(weighted, -log_q, torch.full_like(log_q, float("-inf")))
    probs = torch.where(uniform, torch.zeros_like(log_q), probs)
    has_neg = neg.any(dim=1, keepdim=True)
    probs = torch.softmax(probs.masked_fill(~has_neg, 0.0), dim=1)
    return probs * has_neg


def distance_weighted_triplets(
    distances: Tensor,
    labels: Tensor,
    embedding_dim: int,
    cutoff: float = 0.5,
    nonzero_loss_cutoff: float = 1.4,
    generator: torch.Generator | None = None,
) -> TripletIndices:
    """Distance-weighted sampling: for every positive pair (a, p), one negative drawn for anchor a.

    Probabilities from ``distance_weighted_probabilities``; draws come from ``generator`` (which must
    live on the matrix's device) so a seeded generator gives the same triplets on every run.
    """
    pos, neg = label_masks(labels)
    probs = distance_weighted_probabilities(distances, labels, embedding_dim, cutoff, nonzero_loss_cutoff)
    anchors, positives = torch.nonzero(pos & neg.any(dim=1, keepdim=True), as_tuple=True)
    if len(anchors) == 0:
        return anchors, positives, positives.clone()
    # Draw as many negatives per anchor as the largest positive count, then give the k-th positive pair
    # of each anchor its k-th draw: memory O(N * max positives), not O(pairs * N).
    rank = (pos.cumsum(dim=1) - 1)[anchors, positives]
    usable = probs.sum(dim=1, keepdim=True) > 0  # rows without negatives cannot be sampled from
    safe = torch.where(usable, probs, torch.ones_like(probs))
    draws = torch.multinomial(safe, int(pos.sum(dim=1).max()), replacement=True, generator=generator)
    return anchors, positives, draws[anchors, rank]
