"""Binomial deviance loss (Yi, Lei, Liao and Li 2014), as cgml uses it (Eq. 7)."""

from __future__ import annotations

import torch.nn.functional as F
from torch import Tensor

from dml_core.losses.base import (
    DISTANCES,
    REDUCTIONS,
    MetricLoss,
    check_choice,
    is_similarity,
    label_masks,
    masked_total,
    pairwise_matrix,
)


class BinomialDevianceLoss(MetricLoss):
    """Yi et al. 2014: sum_ij W_ij log(1 + exp(-alpha (S_ij - beta) M_ij)) on cosine similarity S, with
    M_ij = 1 for a positive pair and -C for a negative pair, and W_ij = 1/#positive pairs or
    1/#negative pairs. So the loss is

        mean_{pos} softplus(-alpha (S - beta)) + mean_{neg} softplus(C alpha (S - beta)).

    Defaults alpha=2, beta=0.5, C=25 are those cgml states for CGML(Binomial) (its eta_ij = 1 / 25).
    cgml does not say how pairs are normalised; this follows Yi's W. pytorch-metric-learning has no
    binomial deviance loss; the tests check hand-computed cases. ``reduction="sum"`` drops W (each ordered pair
    counts once): cgml's Eq. 7 as printed, a sum over i, j (reading cgml.reduction). ``last_terms``: "pos", "neg".
    """

    name = "binomial"

    def __init__(
        self,
        alpha: float = 2.0,
        beta: float = 0.5,
        neg_cost: float = 25.0,
        distance: str = "cosine",
        reduction: str = "mean",
    ) -> None:
        super().__init__()
        check_choice(distance, tuple(d for d in DISTANCES if is_similarity(d)), self.name, "distance")
        check_choice(reduction, REDUCTIONS, self.name, "reduction")
        self.alpha, self.beta, self.neg_cost, self.distance = alpha, beta, neg_cost, distance
        self.reduction = reduction

    def compute_loss(self, embeddings: Tensor, labels: Tensor) -> Tensor:
        sim = pairwise_matrix(embeddings, embeddings, self.distance)
        pos, neg = label_masks(labels)
        shifted = self.alpha * (sim - self.beta)
        pos_loss = masked_total(F.softplus(-shifted), pos, self.reduction)
        neg_loss = masked_total(F.softplus(self.neg_cost * shifted), neg, self.reduction)
        self.record_terms(pos=pos_loss, neg=neg_loss)
        return pos_loss + neg_loss
