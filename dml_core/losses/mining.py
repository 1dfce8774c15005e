"""Miners: pure functions of (dissimilarity matrix, labels) that return index tensors or boolean masks.

Every miner takes ``dissim``, an (N, N) matrix where smaller means closer (a distance, or a negated
similarity: ``base.as_dissimilarity``). Nothing here needs gradients: callers pass detached matrices or
the miners detach them. Triplets are ``(anchor, positive, negative)`` index tensors; pairs are
``(anchor_pos, positive, anchor_neg, negative)`` as in pytorch-metric-learning.

Host syncs: an index list has a data-dependent length, so on CUDA ``nonzero`` waits for the device. A loss that
only needs "which pairs / triplets" takes the mask form (``multi_similarity_masks``, ``hard_triplet_mask``), which
waits for nothing. The index forms stay where a loss reduces over the mined list (triplet, margin): a masked sum
over the full grid adds the same terms in another order, which changes the last bits of the committed CPU results
(how often: docs/performance.md), and training amplifies those.
"""

from __future__ import annotations

import torch
import torch.nn.functional as F
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
    hardest_pos, hardest_neg, usable = _hardest(dissim, labels)
    anchors = torch.nonzero(usable, as_tuple=True)[0]
    return anchors, hardest_pos[anchors], hardest_neg[anchors]


def hard_triplet_mask(dissim: Tensor, labels: Tensor) -> Tensor:
    """``hard_triplets`` as a boolean (N, N, N) mask, True at (a, p, n) for each mined triplet: no host sync.

    >>> line = torch.tensor([[0.0, 1.0, 3.0], [1.0, 0.0, 2.0], [3.0, 2.0, 0.0]])
    >>> hard_triplet_mask(line, torch.tensor([0, 0, 1])).nonzero().tolist()
    [[0, 1, 2], [1, 0, 2]]
    """
    hardest_pos, hardest_neg, usable = _hardest(dissim, labels)
    n = len(labels)
    positive, negative = F.one_hot(hardest_pos, n).bool(), F.one_hot(hardest_neg, n).bool()
    return usable[:, None, None] & positive[:, :, None] & negative[:, None, :]


def _hardest(dissim: Tensor, labels: Tensor) -> tuple[Tensor, Tensor, Tensor]:
    """Per anchor: its farthest positive, its nearest negative, and whether it has both."""
    dissim = dissim.detach()
    pos, neg = label_masks(labels)
    hardest_pos = dissim.masked_fill(~pos, float("-inf")).argmax(dim=1)
    hardest_neg = dissim.masked_fill(~neg, float("inf")).argmin(dim=1)
    return hardest_pos, hardest_neg, pos.any(dim=1) & neg.any(dim=1)


TRIPLET_MINERS = ("all", "semihard", "hard")


def multi_similarity_masks(dissim: Tensor, labels: Tensor, epsilon: float) -> tuple[Tensor, Tensor]:
    """Multi-similarity pair mining (Wang et al. 2019, Eqs. 5-6), written for a dissimilarity: boolean (N, N) masks
    of the positive and the negative pairs kept.

    In similarity terms: keep a negative k of anchor i when S_ik + eps > min_{y_j = y_i} S_ij, and a
    positive j when S_ij - eps < max_{y_k != y_i} S_ik. An anchor without negatives keeps no positives
    and one without positives keeps no negatives.
    """
    dissim = dissim.detach()
    pos, neg = label_masks(labels)
    nearest_neg = dissim.masked_fill(~neg, float("inf")).amin(dim=1, keepdim=True)
    farthest_pos = dissim.masked_fill(~pos, float("-inf")).amax(dim=1, keepdim=True)
    return pos & (dissim + epsilon > nearest_neg), neg & (dissim - epsilon < farthest_pos)


def multi_similarity_pairs(dissim: Tensor, labels: Tensor, epsilon: float) -> PairIndices:
    """``multi_similarity_masks`` as pair indices ``(anchor_pos, positive, anchor_neg, negative)``."""
    hard_pos, hard_neg = multi_similarity_masks(dissim, labels, epsilon)
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
    an anchor whose negatives all lie beyond the cutoff falls back to uniform over its negatives (the authors'
    code draws uniformly from the whole batch then, the anchor's own class and itself included); an anchor
    without negatives gets a zero row. ``distances`` must be Euclidean distances between L2-normalised embeddings.
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
    # The draw count waits for the device (a host sync); a fixed count (N - 1) would take other numbers from the
    # generator's stream for every row after the first and so sample other triplets than the committed runs did.
    draws = torch.multinomial(safe, int(pos.sum(dim=1).max()), replacement=True, generator=generator)
    return anchors, positives, draws[anchors, rank]
