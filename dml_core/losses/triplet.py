"""Triplet loss (Weinberger et al. 2006; FaceNet, Schroff et al. 2015) with all / semi-hard / hard mining."""

from __future__ import annotations

import torch
from torch import Tensor

from dml_core.losses.base import (
    DISTANCES,
    REDUCTIONS,
    MetricLoss,
    as_dissimilarity,
    check_choice,
    margin_gap,
    mean_nonzero,
    pairwise_matrix,
)
from dml_core.losses.mining import TRIPLET_MINERS, all_triplets, hard_triplets, semihard_triplets


class TripletLoss(MetricLoss):
    """[D_ap - D_an + margin]_+ over mined triplets, averaged over the non-zero ones.

    Defaults are FaceNet's: squared Euclidean distance, margin 0.2 (embeddings L2-normalised by the
    model). cgml's CGML(Tri) (Eq. 5) is the same loss with margin 0.1; gpw's Eq. 12 uses the plain
    distance. ``mining``:
        "all"      every valid triplet in the batch;
        "semihard" d_ap < d_an <= d_ap + margin (all of them, see ``mining.semihard_triplets``);
        "hard"     batch-hard: farthest positive and nearest negative per anchor (Hermans et al. 2017).
    Averaging over non-zero triplets (pytorch-metric-learning's default, ``reduction="mean"``) differs from
    FaceNet's sum (``reduction="sum"``, cgml's Eq. 5 as printed) by a per-batch scale, the number of non-zero
    triplets; under a weighted second term (cgml's lambda) that scale is the weight's (reading cgml.reduction).
    """

    name = "triplet"

    def __init__(
        self, margin: float = 0.2, mining: str = "all", distance: str = "squared_euclidean", reduction: str = "mean"
    ) -> None:
        super().__init__()
        check_choice(mining, TRIPLET_MINERS, self.name, "mining")
        check_choice(distance, DISTANCES, self.name, "distance")
        check_choice(reduction, REDUCTIONS, self.name, "reduction")
        self.margin, self.mining, self.distance, self.reduction = margin, mining, distance, reduction

    def compute_loss(self, embeddings: Tensor, labels: Tensor) -> Tensor:
        mat = pairwise_matrix(embeddings, embeddings, self.distance)
        # Index lists, one host sync on CUDA: the average runs over the mined list, in its order (``mining``).
        if self.mining == "all":
            a, p, n = all_triplets(labels)
        elif self.mining == "semihard":
            a, p, n = semihard_triplets(as_dissimilarity(mat, self.distance), labels, self.margin)
        else:
            a, p, n = hard_triplets(as_dissimilarity(mat, self.distance), labels)
        violation = margin_gap(mat[a, p], mat[a, n], self.distance) + self.margin
        hinge = torch.relu(violation)
        return mean_nonzero(hinge) if self.reduction == "mean" else hinge.sum()
