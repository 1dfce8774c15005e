"""Contrastive loss (Hadsell, Chopra and LeCun 2006)."""

from __future__ import annotations

import torch
from torch import Tensor

from dml_core.losses.base import (
    DISTANCES,
    MetricLoss,
    check_choice,
    label_masks,
    margin_gap,
    masked_mean,
    mean_nonzero,
    pairwise_matrix,
)

REDUCTIONS = ("mean_nonzero", "mean")


class ContrastiveLoss(MetricLoss):
    """Pull positive pairs inside ``pos_margin``, push negative pairs beyond ``neg_margin``.

    Per ordered pair (i, j), i != j, with D the ``distance``:
        positive: [D_ij - pos_margin]_+ ** power        negative: [neg_margin - D_ij]_+ ** power
    (for a similarity the hinges flip: [pos_margin - S]_+ and [S - neg_margin]_+).

    Hadsell et al. use squared hinges (``power=2``) with ``pos_margin=0``; gpw's Eq. 11 uses the plain
    distance (``power=1``), as pytorch-metric-learning does. Reduction "mean_nonzero" averages each of the
    two terms over its non-zero pairs and adds them (pytorch-metric-learning's default); "mean" averages
    each term over all its pairs. ``last_terms``: "pos", "neg".
    """

    name = "contrastive"

    def __init__(
        self,
        pos_margin: float = 0.0,
        neg_margin: float = 1.0,
        distance: str = "euclidean",
        power: float = 1.0,
        reduction: str = "mean_nonzero",
    ) -> None:
        super().__init__()
        check_choice(distance, DISTANCES, self.name, "distance")
        check_choice(reduction, REDUCTIONS, self.name, "reduction")
        self.pos_margin, self.neg_margin = pos_margin, neg_margin
        self.distance, self.power, self.reduction = distance, power, reduction

    def compute_loss(self, embeddings: Tensor, labels: Tensor) -> Tensor:
        mat = pairwise_matrix(embeddings, embeddings, self.distance)
        pos, neg = label_masks(labels)
        pos_terms = torch.relu(margin_gap(mat, self.pos_margin, self.distance)).pow(self.power)
        neg_terms = torch.relu(margin_gap(self.neg_margin, mat, self.distance)).pow(self.power)
        if self.reduction == "mean_nonzero":
            pos_loss = mean_nonzero(pos_terms * pos)
            neg_loss = mean_nonzero(neg_terms * neg)
        else:
            pos_loss, neg_loss = masked_mean(pos_terms, pos), masked_mean(neg_terms, neg)
        self.record_terms(pos=pos_loss, neg=neg_loss)
        return pos_loss + neg_loss
