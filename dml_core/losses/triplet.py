"""Triplet loss (Weinberger et al. 2006; FaceNet, Schroff et al. 2015) with all / semi-hard / hard mining."""

from __future__ import annotations

import torch
from torch import Tensor

from dml_core.losses.base import (
    DISTANCES,
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
    Averaging over non-zero triplets (pytorch-metric-learning's default) differs from FaceNet's sum only by
    a per-batch scale.
    """

    name = "triplet"

    def __init__(self, margin: float = 0.2, mining: str = "all", distance: str = "squared_euclidean") -> None:
        super().__init__()
        check_choice(mining, TRIPLET_MINERS, self.name, "mining")
        check_choice(distance, DISTANCES, self.name, "distance")
        self.margin, self.mining, self.distance = margin, mining, distance

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
        return mean_nonzero(torch.relu(violation))
