"""Lifted structured loss (Song, Xiang, Jegelka and Savarese 2016)."""

from __future__ import annotations

import torch
from torch import Tensor

from dml_core.losses.base import (
    DISTANCES,
    MetricLoss,
    anchored_logsumexp,
    as_dissimilarity,
    check_choice,
    label_masks,
    margin_gap,
    masked_logsumexp,
    pairwise_matrix,
)


class LiftedStructureLoss(MetricLoss):
    """Song et al. 2016, Eq. 4 (the smooth upper bound), on Euclidean distances with margin 1:

        J_ij = log( sum_{k in N_i} exp(m - D_ik) + sum_{l in N_j} exp(m - D_jl) ) + D_ij
        L    = 1 / (2|P|) * sum_{(i,j) in P} [J_ij]_+ ** 2

    over the positive pairs P of the batch, with negatives of *both* i and j in one log-sum-exp. Computed
    over ordered pairs, each unordered pair counted twice: mean over ordered pairs of [J]_+^2 / 2, which is
    the same number. This equals pytorch-metric-learning's ``LiftedStructureLoss`` (not its
    ``GeneralizedLiftedStructureLoss``, the per-anchor form of Hermans et al. 2017 that anml's Eq. 23 uses).
    """

    name = "lifted"

    def __init__(self, margin: float = 1.0, distance: str = "euclidean") -> None:
        super().__init__()
        check_choice(distance, DISTANCES, self.name, "distance")
        self.margin, self.distance = margin, distance

    def compute_loss(self, embeddings: Tensor, labels: Tensor) -> Tensor:
        mat = pairwise_matrix(embeddings, embeddings, self.distance)
        pos, neg = label_masks(labels)
        neg_lse = masked_logsumexp(margin_gap(self.margin, mat, self.distance), neg)  # (N,) per anchor
        # (N, N) matrix of J_ij; only positive pairs count. A batch of one class has no negatives at all
        # (masked_logsumexp then gives 0, not -inf) and no loss: the has-negatives mask removes it.
        j = torch.logaddexp(neg_lse.unsqueeze(1), neg_lse.unsqueeze(0)) + as_dissimilarity(mat, self.distance)
        keep = pos & neg.any(dim=1, keepdim=True)
        terms = torch.where(keep, torch.relu(j).pow(2), torch.zeros_like(j))
        return terms.sum() / (2 * keep.sum().clamp(min=1))


class GeneralizedLiftedLoss(MetricLoss):
    """Per-anchor ("generalized") lifted structure, with anml's adaptive options (anml Eqs. 23 and 25):

        P_i = 1/g1 log( [exp(-g1 l1)] + sum_{j in P_i} exp(-g1 S_ij) )      (soft -min of positive S)
        N_i = 1/g2 log( [exp( g2 l2)] + sum_{k in N_i} exp( g2 S_ik) )      (soft  max of negative S)
        L   = mean_i [P_i + N_i + margin]_+

    on cosine similarity S by default; with a distance D the roles flip (P_i a soft max of positive D,
    N_i a soft -min of negative D). ``pos_scale``/``neg_scale`` are gamma_1/gamma_2, ``pos_anchor``/
    ``neg_anchor`` the optional fixed terms lambda_1/lambda_2 (in the matrix's units; None leaves the term
    out). gamma = 1 without anchors is anml's Eq. 23 (Hermans et al. 2017's generalisation, which
    pytorch-metric-learning calls ``GeneralizedLiftedStructureLoss``); anml's improved lifted (Eq. 25)
    sets both; anml gives no values for them. anml sums over anchors; this averages (a constant scale).
    Anchors without a positive or a negative contribute 0.
    """

    name = "generalized_lifted"

    def __init__(
        self,
        margin: float = 1.0,
        distance: str = "cosine",
        pos_scale: float = 1.0,
        neg_scale: float = 1.0,
        pos_anchor: float | None = None,
        neg_anchor: float | None = None,
    ) -> None:
        super().__init__()
        check_choice(distance, DISTANCES, self.name, "distance")
        self.margin, self.distance = margin, distance
        self.pos_scale, self.neg_scale = pos_scale, neg_scale
        self.pos_anchor, self.neg_anchor = pos_anchor, neg_anchor

    def _soft_extreme(self, dissim: Tensor, mask: Tensor, scale: float, anchor: float | None) -> Tensor:
        # 1/scale * log( [exp(scale * anchor')] + sum_mask exp(scale * dissim) ), anchor' in dissim units.
        fixed = None if anchor is None else scale * as_dissimilarity(anchor, self.distance)
        return anchored_logsumexp(scale * dissim, mask, fixed) / scale

    def compute_loss(self, embeddings: Tensor, labels: Tensor) -> Tensor:
        dissim = as_dissimilarity(pairwise_matrix(embeddings, embeddings, self.distance), self.distance)
        pos, neg = label_masks(labels)
        pos_term = self._soft_extreme(dissim, pos, self.pos_scale, self.pos_anchor)
        # N_i is the same soft extreme of the negated dissimilarity (so its fixed term is negated too).
        neg_anchor = None if self.neg_anchor is None else -self.neg_anchor
        neg_term = self._soft_extreme(-dissim, neg, self.neg_scale, neg_anchor)
        has_both = pos.any(dim=1) & neg.any(dim=1)
        terms = torch.relu(pos_term + neg_term + self.margin)
        return torch.where(has_both, terms, torch.zeros_like(terms)).mean()
