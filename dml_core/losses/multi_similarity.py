"""Multi-similarity loss with its pair mining (Wang, Han, Huang, Dong and Scott 2019)."""

from __future__ import annotations

from torch import Tensor

from dml_core.losses.base import (
    DISTANCES,
    MetricLoss,
    as_dissimilarity,
    check_choice,
    label_masks,
    margin_gap,
    masked_logsumexp,
    pairwise_matrix,
)
from dml_core.losses.mining import multi_similarity_masks

MS_VERSIONS: tuple[str, ...] = ("v1", "v2")  # v2: without the 1 inside the logs (gpw Sec. IV-B5)


class MultiSimilarityLoss(MetricLoss):
    """Wang et al. 2019, Eq. 8, on cosine similarity S, after MS pair mining (Eqs. 5-6, ``epsilon``):

        L = 1/N sum_i [ 1/alpha log(1 + sum_{P_i} exp(-alpha (S_ik - lambda)))
                      + 1/beta  log(1 + sum_{N_i} exp( beta (S_ik - lambda))) ]

    Defaults alpha=2, beta=50, lambda=1, epsilon=0.1 are the paper's. The authors' released code and
    pytorch-metric-learning use lambda ("base"/"thresh") 0.5; anml's reading of MS (Prop. 7) also uses
    0.5. ``epsilon=None`` switches mining off (all pairs). An anchor with an empty mined set contributes 0
    for that term, as the formula says (the authors' code drops such an anchor's whole loss but still
    divides by N). ``last_terms``: "pos", "neg".

    ``version`` (gpw Sec. IV-B5, Eq. 39): "v1" is the loss above; "v2" drops the 1 inside each log,
    1/alpha log sum_{P_i} exp(...), so the pair weights (the gradient w.r.t. each S or D) become a plain
    softmax over the mined pairs, without the "+1" in the denominator. gpw compares both with
    ``distance="euclidean"``, ``lam=1`` (its m), alpha, beta = 2, 50, epsilon = 0.1.
    """

    name = "multi_similarity"

    def __init__(
        self,
        alpha: float = 2.0,
        beta: float = 50.0,
        lam: float = 1.0,
        epsilon: float | None = 0.1,
        distance: str = "cosine",
        version: str = "v1",
    ) -> None:
        super().__init__()
        check_choice(distance, DISTANCES, self.name, "distance")
        check_choice(version, MS_VERSIONS, self.name, "version")
        self.version = version
        self.alpha, self.beta, self.lam, self.epsilon, self.distance = alpha, beta, lam, epsilon, distance

    def compute_loss(self, embeddings: Tensor, labels: Tensor) -> Tensor:
        mat = pairwise_matrix(embeddings, embeddings, self.distance)
        if self.epsilon is None:
            pos, neg = label_masks(labels)
        else:
            pos, neg = multi_similarity_masks(as_dissimilarity(mat, self.distance), labels, self.epsilon)
        pos_exp = self.alpha * margin_gap(mat, self.lam, self.distance)
        neg_exp = self.beta * margin_gap(self.lam, mat, self.distance)
        add_one = self.version == "v1"
        pos_loss = (masked_logsumexp(pos_exp, pos, add_one=add_one) / self.alpha).mean()
        neg_loss = (masked_logsumexp(neg_exp, neg, add_one=add_one) / self.beta).mean()
        self.record_terms(pos=pos_loss, neg=neg_loss)
        return pos_loss + neg_loss
