"""Lifted structured loss (Song, Xiang, Jegelka and Savarese 2016)."""

from __future__ import annotations

import torch
from torch import Tensor, nn

from dml_core.losses.base import (
    DISTANCES,
    as_dissimilarity,
    check_batch,
    check_choice,
    label_masks,
    margin_gap,
    masked_logsumexp,
    pairwise_matrix,
)


class LiftedStructureLoss(nn.Module):
    """Song et al. 2016, Eq. 4 (the smooth upper bound), on Euclidean distances with margin 1:

        J_ij = log( sum_{k in N_i} exp(m - D_ik) + sum_{l in N_j} exp(m - D_jl) ) + D_ij
        L    = 1 / (2|P|) * sum_{(i,j) in P} [J_ij]_+ ** 2

    over the positive pairs P of the batch, with negatives of *both* i and j in one log-sum-exp. Computed
    over ordered pairs, each unordered pair counted twice: mean over ordered pairs of [J]_+^2 / 2, which is
    the same number. This equals pytorch-metric-learning's ``LiftedStructureLoss`` (not its
    ``GeneralizedLiftedStructureLoss``, the per-anchor form of Hermans et al. 2017 that anml's Eq. 23 uses).
    """

    def __init__(self, margin: float = 1.0, distance: str = "euclidean") -> None:
        super().__init__()
        check_choice(distance, DISTANCES, "lifted", "distance")
        self.margin, self.distance = margin, distance

    def forward(self, embeddings: Tensor, labels: Tensor) -> Tensor:
        check_batch(embeddings, labels, "lifted")
        mat = pairwise_matrix(embeddings, embeddings, self.distance)
        pos, neg = label_masks(labels)
        neg_lse = masked_logsumexp(margin_gap(self.margin, mat, self.distance), neg)  # (N,) per anchor
        # (N, N) matrix of J_ij; only positive pairs count. A batch of one class has no negatives at all
        # (masked_logsumexp then gives 0, not -inf) and no loss: the has-negatives mask removes it.
        j = torch.logaddexp(neg_lse.unsqueeze(1), neg_lse.unsqueeze(0)) + as_dissimilarity(mat, self.distance)
        keep = pos & neg.any(dim=1, keepdim=True)
        terms = torch.where(keep, torch.relu(j).pow(2), torch.zeros_like(j))
        return terms.sum() / (2 * keep.sum().clamp(min=1))
