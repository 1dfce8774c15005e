"""Adaptive Neighborhood Metric Learning, deep form (DANML) and anml's improved Proxy-NCA.

Song, Han, Cheng, Lu and Nie, "Adaptive Neighborhood Metric Learning" (IEEE TPAMI 2022); equation numbers
are the paper's (notes: papers/anml/method.md). anml's improved lifted
structure (Eq. 25) is ``lifted.GeneralizedLiftedLoss`` with scales and anchors, its improved N-pair (Eq. 31)
``npair.NPairLoss`` with ``scale``/``offset``; both are only reused here, not repeated.
"""

from __future__ import annotations

from collections.abc import Callable

import torch
import torch.nn.functional as F
from torch import Tensor

from dml_core.losses.base import (
    MetricLoss,
    anchored_logsumexp,
    check_choice,
    label_masks,
    masked_mean,
    pairwise_matrix,
)
from dml_core.losses.mining import multi_similarity_masks
from dml_core.losses.proxy_nca import ProxyNCALoss

# d(x_i, x_j) of Eq. 22. The experiments use "negative cosine similarity" on L2-normalised embeddings (Sec.
# 7.2.1). "one_minus_cosine" (1 - cos) is that up to a constant shift that the lambda anchors feel: with it the
# printed lambda grid (0.5-0.65) and Prop. 7's reading of multi-similarity (lambda = m = 0.5, MS's threshold
# 0.5 on the cosine) agree; "negative_cosine" (-cos) is the literal wording.
DANML_DISTANCES: tuple[str, ...] = ("one_minus_cosine", "negative_cosine", "euclidean", "squared_euclidean")

# The scalar loss l(x) of Eq. 22: the experiments use the logistic loss (Sec. 7.2.1), Prop. 7 the identity,
# LANML (Eq. 19) the hinge.
LINKS: dict[str, Callable[[Tensor], Tensor]] = {
    "logistic": F.softplus,
    "identity": lambda x: x,
    "hinge": F.relu,
}


def log_exp_mean(values: Tensor, mask: Tensor, gamma: float, anchor: float | None = None) -> Tensor:
    """Row-wise log-exp mean b(gamma) of anml Eq. 12, with the optional fixed member lambda of Eq. 22:

        b = -1/gamma * log( (exp(-gamma lambda) + sum_{j in mask} exp(-gamma v_j)) / (|mask| + 1) )

    (without ``anchor``: no lambda term and |mask| in the denominator). gamma > 0 gives a soft mean of the
    smallest values, gamma < 0 of the largest (Theorem 3); gamma = 0 is the limit, the arithmetic mean
    (Lemma 1). A row with neither a masked value nor an anchor gives 0; callers drop it.

    >>> v = torch.tensor([[1.0, 2.0, 6.0]])
    >>> everything = torch.ones_like(v, dtype=torch.bool)
    >>> log_exp_mean(v, everything, 0.0), log_exp_mean(v, everything, 0.0, anchor=3.0)
    (tensor([3.]), tensor([3.]))
    >>> round(log_exp_mean(v, everything, 1e4).item(), 3), round(log_exp_mean(v, everything, -1e4).item(), 3)
    (1.0, 6.0)
    """
    count = mask.sum(dim=1) + (anchor is not None)
    if gamma == 0.0:
        total = torch.where(mask, values, torch.zeros_like(values)).sum(dim=1) + (anchor or 0.0)
        return total / count.clamp(min=1)
    fixed = None if anchor is None else -gamma * anchor
    log_sum = anchored_logsumexp(-gamma * values, mask, fixed)
    return -(log_sum - torch.log(count.clamp(min=1).to(values.dtype))) / gamma


def danml_distance(embeddings: Tensor, distance: str) -> Tensor:
    """The (N, N) matrix d(x_i, x_j) of Eq. 22 for one of ``DANML_DISTANCES`` (cosine ones normalise first).

    >>> x = torch.tensor([[1.0, 0.0], [0.0, 2.0]])
    >>> danml_distance(x, "one_minus_cosine")
    tensor([[0., 1.],
            [1., 0.]])
    """
    if distance == "one_minus_cosine":
        return 1.0 - pairwise_matrix(embeddings, embeddings, "cosine")
    if distance == "negative_cosine":
        return -pairwise_matrix(embeddings, embeddings, "cosine")
    return pairwise_matrix(embeddings, embeddings, distance)


class DANMLLoss(MetricLoss):
    """DANML, anml Eq. 22, per anchor i of the batch:

        P_i = -1/g1 log[ (exp(-g1 l1) + sum_{j in S_i} exp(-g1 d_ij)) / (|S_i| + 1) ]   similar-set radius
        N_i = -1/g2 log[ (exp(-g2 l2) + sum_{l in D_i} exp(-g2 d_il)) / (|D_i| + 1) ]   dissimilar-set radius
        L   = mean_i  l( P_i - N_i + margin )

    ``gamma1`` (g1 < 0 in the paper: P_i a soft mean of the *largest* positive distances) and ``gamma2``
    (g2 > 0: N_i a soft mean of the *smallest* negative distances) set the neighbourhood radii;
    ``lambda1``/``lambda2`` are the fixed radius anchors of Sec. 6.1 (None drops the term and its +1: Eq. 18's
    form, the "without (lambda1, lambda2)" row of Table 3). gamma = 0 means the Lemma 1 limit (the mean).

    Where the paper is silent, each choice is a parameter:

    - ``distance``: one of ``DANML_DISTANCES`` (see there); default "one_minus_cosine".
    - ``link``: l of Eq. 22, one of ``LINKS``; "logistic" log(1 + e^x) is the experiments' (its exact form is
      not printed). ``margin`` (not in Eq. 22; 0 is the paper's) shifts its argument, for the hinge-based
      special cases (Prop. 6: g1 -> -inf, g2 -> +inf, hinge with margin m is the batch-hard triplet loss).
    - ``epsilon``: S_i and D_i are the pairs kept by multi-similarity mining (Wang et al. 2019, Eqs. 5-6,
      "the sample mining strategy used in [26]", Sec. 7.2.1) with this epsilon, MS's 0.1 by default (anml does
      not give one), in units of ``distance``; None keeps every in-batch pair. |S_i|, |D_i| count the mined pairs.
    - Reduction: the mean over anchors (the paper sums: a constant factor). Without an anchor term, an anchor
      whose (mined) S_i or D_i is empty has no radius and is left out of the mean.

    Special cases (tested): Prop. 7 (link "identity", g1 = -alpha, g2 = beta, l1 = l2 = m is the
    multi-similarity loss in anml's Eq. 27 form, MS's threshold being 1 - m on the cosine); g1 = -1, g2 = 1
    without anchors, "negative_cosine" and the hinge is the generalised lifted structure (Eq. 23) up to a
    log|S_i| + log|D_i| margin.

    Defaults (the paper does not report the values it selected): gamma1 = -2, gamma2 = 30 and sigma = 0.02 are
    the middles of the printed grids (|gamma1| in {1, 2, 3}, gamma2 in {25, 30, 35}, lambda2 = lambda1 + sigma,
    sigma in {0.01, 0.02, 0.03}); lambda1 = 0.5 is the smallest of its grid {0.5, ..., 0.65} and MS's
    threshold by Prop. 7, so lambda2 = 0.52.

    ``last_terms``: "pos_radius", "neg_radius" (mean P_i and N_i over the anchors used).
    """

    name = "danml"

    def __init__(
        self,
        gamma1: float = -2.0,
        gamma2: float = 30.0,
        lambda1: float | None = 0.5,
        lambda2: float | None = 0.52,
        distance: str = "one_minus_cosine",
        link: str = "logistic",
        margin: float = 0.0,
        epsilon: float | None = 0.1,
    ) -> None:
        super().__init__()
        check_choice(distance, DANML_DISTANCES, self.name, "distance")
        check_choice(link, tuple(LINKS), self.name, "link")
        self.gamma1, self.gamma2, self.lambda1, self.lambda2 = gamma1, gamma2, lambda1, lambda2
        self.distance, self.link, self.margin, self.epsilon = distance, link, margin, epsilon

    def neighbour_sets(self, dist: Tensor, labels: Tensor) -> tuple[Tensor, Tensor]:
        """Boolean (N, N) masks S and D: every positive / negative pair, or those MS mining keeps."""
        if self.epsilon is None:
            return label_masks(labels)
        return multi_similarity_masks(dist, labels, self.epsilon)

    def compute_loss(self, embeddings: Tensor, labels: Tensor) -> Tensor:
        dist = danml_distance(embeddings, self.distance)
        similar, dissimilar = self.neighbour_sets(dist, labels)
        pos_radius = log_exp_mean(dist, similar, self.gamma1, self.lambda1)
        neg_radius = log_exp_mean(dist, dissimilar, self.gamma2, self.lambda2)
        # An anchor term makes a radius defined even over an empty set (it is then lambda itself).
        used = torch.ones_like(labels, dtype=torch.bool)
        if self.lambda1 is None:
            used = used & similar.any(dim=1)
        if self.lambda2 is None:
            used = used & dissimilar.any(dim=1)
        per_anchor = LINKS[self.link](pos_radius - neg_radius + self.margin)
        self.record_terms(pos_radius=masked_mean(pos_radius, used), neg_radius=masked_mean(neg_radius, used))
        # masked_mean keeps the graph, and gives 0 when no anchor is usable (e.g. a one-class batch).
        return masked_mean(per_anchor, used)


class ImprovedProxyNCALoss(ProxyNCALoss):
    """anml's "improved Proxy-NCA" (Table 3). The paper reports it but prints no formula; this is our
    construction, chosen to be the paper's improved N-pair (Eq. 31) carried over to proxies, since Proxy-NCA
    has N-pair's structure (one positive against a softmax over negatives), with distances for similarities:

        L = 1/N sum_i 1/gamma log( 1 + sum_{z != y_i} exp( gamma (-lambda + d(x_i, p_{y_i}) - d(x_i, p_z)) ) )

    d is Proxy-NCA's squared Euclidean distance between L2-normalised embeddings and proxies; ``gamma`` sets
    the radius of the dissimilar neighbourhood B_i (the soft minimum over negative proxies), ``lam`` (lambda)
    its fixed offset. gamma = 1, lambda = 0 is Proxy-NCA as pytorch-metric-learning and ProxyNCA++ compute it
    (positive proxy in the denominator); ``exclude_positive=True`` drops the "1 +" as Movshovitz-Attias et al.'s
    Eq. 7 does, and then lambda only shifts the loss. gamma -> inf gives the hinge
    [max_z (d(x, p_y) - d(x, p_z)) - lambda]_+. gamma and lambda are not given by the paper.
    """

    name = "improved_proxy_nca"

    def __init__(
        self,
        num_classes: int,
        embedding_dim: int,
        gamma: float = 1.0,
        lam: float = 0.0,
        exclude_positive: bool = False,
    ) -> None:
        super().__init__(num_classes, embedding_dim, scale=gamma, exclude_positive=exclude_positive, offset=lam)

    def compute_loss(self, embeddings: Tensor, labels: Tensor) -> Tensor:
        return super().compute_loss(embeddings, labels) / self.scale
