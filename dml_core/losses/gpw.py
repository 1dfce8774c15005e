"""gpw: the general pair-based and triplet-based weighting losses (Liu, Cheng, Wang and Su 2019, arXiv 1905.12837).

Both losses are "sum of detached weight x hinge" (Eqs. 4-5, 10): mine pairs or triplets, weight each with a number
computed from the *detached* distances (footnote 6: ``D_ij.detach()``), so the gradient of a term is
``w * dD/dtheta``. Where the paper is silent, each choice is a constructor parameter (``hinge_weights`` says how
``normalization_scope`` reads Algorithm 1; papers/gpw/method.md lists the readings).
"""

from __future__ import annotations

import torch
from torch import Tensor

from dml_core.errors import InputError
from dml_core.losses.base import MetricLoss, check_choice, label_masks, pairwise_matrix
from dml_core.losses.mining import hard_triplet_mask, multi_similarity_masks

WEIGHTINGS: tuple[str, ...] = ("constant", "power", "exponential")
NORMALIZATION_SCOPES: tuple[str, ...] = ("anchor", "batch")
# Eqs. 18/21 use the distance; Eqs. 36/37 ("Square" in Table III) the squared distance.
GPW_DISTANCES: tuple[str, ...] = ("euclidean", "squared_euclidean")
GPW_TRIPLET_MININGS: tuple[str, ...] = ("margin", "hard")


def hinge_weights(gap: Tensor, mined: Tensor, weighting: str, exponent: float, normalize: bool, scope: str) -> Tensor:
    """Detached weights for hinge terms ``[gap]_+`` on the ``mined`` entries; 0 elsewhere.

    ``gap`` is the hinge's argument (D - m1, m2 - D or D_ij - D_ik + m), >= 0 where mined; dim 0 is the anchor.
    ``exponent`` is p (or q) for "power" and alpha (or beta) for "exponential"; "constant" ignores it. With
    ``normalize`` the weights are divided by their sum over each anchor's entries (scope "anchor") or over
    the whole tensor (scope "batch"); an empty group stays 0. Weightings (Sec. III-B): "constant" (Eqs. 24-25),
    "power" (Eqs. 26-28, with ``0 ** 0 = 1``: p = 0 gives the constant weight even at zero gap) and "exponential"
    (Eqs. 29-31); normalised, constant weights average the mined terms and exponential ones are a softmax.

    Scope "anchor" (the default) normalises as the per-anchor loop of Algorithm 1 computes the weights, and the
    loss is ``1/N sum_i L_i`` (step 5); "batch" reads Eqs. 32-34 literally, and as the normalised weights then
    already sum to 1 the loss is the plain sum. Without normalisation the loss is always ``1/N sum_i L_i``; an
    anchor with no mined term contributes 0 and still counts in N (Algorithm 1 divides by PK).

    >>> gap = torch.tensor([[0.5, 0.25, 0.0]])
    >>> mined = torch.tensor([[True, True, False]])
    >>> hinge_weights(gap, mined, "power", 1.0, True, "anchor")
    tensor([[0.6667, 0.3333, 0.0000]])
    >>> hinge_weights(gap, mined, "constant", 0.0, True, "anchor")
    tensor([[0.5000, 0.5000, 0.0000]])
    """
    gap = gap.detach()
    dims = tuple(range(1, gap.dim())) if scope == "anchor" else tuple(range(gap.dim()))
    if weighting == "exponential":
        logits = (exponent * gap).masked_fill(~mined, float("-inf"))
        if normalize:
            # Subtracting each group's max (a softmax) keeps exp finite for alpha = 40 or beta = 50.
            shift = logits.amax(dim=dims, keepdim=True)
            logits = logits - torch.where(torch.isfinite(shift), shift, torch.zeros_like(shift))
        weights = logits.exp()
    elif weighting == "power":
        weights = gap.clamp_min(0.0).pow(exponent) * mined
    else:
        weights = mined.to(gap.dtype)
    if normalize:
        total = weights.sum(dim=dims, keepdim=True)
        weights = weights / total.clamp_min(torch.finfo(weights.dtype).tiny)
    return weights


def _check_options(owner: str, weighting: str, scope: str, distance: str, exponents: dict[str, float]) -> None:
    check_choice(weighting, WEIGHTINGS, owner, "weighting")
    check_choice(scope, NORMALIZATION_SCOPES, owner, "normalization_scope")
    check_choice(distance, GPW_DISTANCES, owner, "distance")
    for name, value in exponents.items():
        if value < 0:
            raise InputError(f"{owner}: {name} must be >= 0 (Eqs. 26-31); got {value}")


def _check_unused(owner: str, weighting: str, used_by: dict[str, tuple[str, float]]) -> None:
    """Reject a hyper-parameter set for a weighting that ignores it (a recipe typo would otherwise pass)."""
    for name, (family, value) in used_by.items():
        if value != 0 and weighting != family:
            raise InputError(
                f"{owner}: {name}={value} applies only to weighting {family!r}; weighting is {weighting!r}"
            )


class GeneralPairWeightingLoss(MetricLoss):
    """gpw's pair-based weighting loss (Eq. 18) with threshold mining (Eqs. 16-17):

        L_i = sum_{y_ij=1, D_ij >= m1} w+_ij [D_ij - m1]_+  +  sum_{y_ij=0, D_ij <= m2} w-_ij [m2 - D_ij]_+

    and ``L = 1/N sum_i L_i`` (Algorithm 1). Weights (detached): "constant" w = 1 (Eq. 24); "power"
    w+ = (D - m1)^p, w- = (m2 - D)^q (Eqs. 26-27); "exponential" w+ = exp(alpha (D - m1)),
    w- = exp(beta (m2 - D)) (Eqs. 29-30); ``normalize_weights`` applies Eqs. 32-33 (Table III's v1/v2; False
    is v0). Paper values: m1 = 0; m2 = 0.8 (CUB, Cars) or 1.0 (SOP).

    ``epsilon`` (default None: off) adds the triplet-margin pair mining of Eqs. 22-23 after the thresholds
    (Table II "+ triplet margin", epsilon = 0.1). ``distance="squared_euclidean"`` gives Eq. 36 (Table III
    "Square", used with constant normalised weights, footnote 8). See ``hinge_weights`` for
    ``normalization_scope``. ``last_terms``: "pos", "neg".
    """

    name = "gpw_pair"

    def __init__(
        self,
        pos_margin: float = 0.0,
        neg_margin: float = 0.8,
        weighting: str = "constant",
        p: float = 0.0,
        q: float = 0.0,
        alpha: float = 0.0,
        beta: float = 0.0,
        normalize_weights: bool = True,
        normalization_scope: str = "anchor",
        epsilon: float | None = None,
        distance: str = "euclidean",
    ) -> None:
        super().__init__()
        _check_options(self.name, weighting, normalization_scope, distance, {"p": p, "q": q})
        families = {
            "p": ("power", p),
            "q": ("power", q),
            "alpha": ("exponential", alpha),
            "beta": ("exponential", beta),
        }
        _check_unused(self.name, weighting, families)
        if not 0 <= pos_margin <= neg_margin:
            raise InputError(
                f"{self.name}: expected 0 <= pos_margin (m1) <= neg_margin (m2); got {pos_margin}, {neg_margin}"
            )
        self.pos_margin, self.neg_margin = pos_margin, neg_margin
        self.weighting = weighting
        self.normalize_weights, self.normalization_scope = normalize_weights, normalization_scope
        self.pos_exponent = alpha if weighting == "exponential" else p
        self.neg_exponent = beta if weighting == "exponential" else q
        self.epsilon, self.distance = epsilon, distance

    def compute_loss(self, embeddings: Tensor, labels: Tensor) -> Tensor:
        dist = pairwise_matrix(embeddings, embeddings, self.distance)
        pos, neg = label_masks(labels)
        pos_gap, neg_gap = dist - self.pos_margin, self.neg_margin - dist
        # Mining keeps the boundary as Eqs. 16-17 print it: a zero hinge, so it only changes the averaging count.
        pos_mined = pos & (pos_gap.detach() >= 0)  # Eq. 16
        neg_mined = neg & (neg_gap.detach() >= 0)  # Eq. 17
        if self.epsilon is not None:  # Eqs. 22-23, on top of the thresholds
            ms_pos, ms_neg = multi_similarity_masks(dist, labels, self.epsilon)
            pos_mined, neg_mined = pos_mined & ms_pos, neg_mined & ms_neg
        scope = self.normalization_scope
        w_pos = hinge_weights(pos_gap, pos_mined, self.weighting, self.pos_exponent, self.normalize_weights, scope)
        w_neg = hinge_weights(neg_gap, neg_mined, self.weighting, self.neg_exponent, self.normalize_weights, scope)
        pos_loss = (w_pos * torch.relu(pos_gap)).sum()
        neg_loss = (w_neg * torch.relu(neg_gap)).sum()
        if not (self.normalize_weights and scope == "batch"):
            pos_loss, neg_loss = pos_loss / len(labels), neg_loss / len(labels)
        self.record_terms(pos=pos_loss, neg=neg_loss)
        return pos_loss + neg_loss


class GeneralTripletWeightingLoss(MetricLoss):
    """gpw's triplet-based weighting loss (Eq. 21):

        L_i = sum_{(i, j, k) mined} w_ijk [D_ij - D_ik + m]_+ ,   L = 1/N sum_i L_i

    over triplets with y_ij = 1, y_ik = 0. ``mining``: "margin" keeps every triplet with D_ij + m >= D_ik
    (Eq. 19, the default: the paper states no other); "hard" keeps each anchor's farthest positive and nearest
    negative (Eq. 20 after Hermans et al.; the printed max for the negative is read as min). Weights
    (detached): "constant" 1 (Eq. 25), "power" (D_ij - D_ik + m)^p (Eq. 28), "exponential"
    exp(alpha (D_ij - D_ik + m)) (Eq. 31); ``normalize_weights`` applies Eq. 34. Paper values: m = 0.1 (CUB,
    Cars), 0.2 (SOP). ``distance="squared_euclidean"`` gives Eq. 37. Memory is O(N^3) (the (N, N, N) gap
    tensor): fine for the paper's batches of 80 and 320.
    """

    name = "gpw_triplet"

    def __init__(
        self,
        margin: float = 0.1,
        weighting: str = "constant",
        p: float = 0.0,
        alpha: float = 0.0,
        normalize_weights: bool = True,
        normalization_scope: str = "anchor",
        mining: str = "margin",
        distance: str = "euclidean",
    ) -> None:
        super().__init__()
        _check_options(self.name, weighting, normalization_scope, distance, {"p": p})
        _check_unused(self.name, weighting, {"p": ("power", p), "alpha": ("exponential", alpha)})
        check_choice(mining, GPW_TRIPLET_MININGS, self.name, "mining")
        if margin < 0:
            raise InputError(f"{self.name}: margin must be >= 0 (Eq. 19); got {margin}")
        self.margin, self.weighting, self.mining, self.distance = margin, weighting, mining, distance
        self.exponent = alpha if weighting == "exponential" else p
        self.normalize_weights, self.normalization_scope = normalize_weights, normalization_scope

    def compute_loss(self, embeddings: Tensor, labels: Tensor) -> Tensor:
        dist = pairwise_matrix(embeddings, embeddings, self.distance)
        pos, neg = label_masks(labels)
        gap = dist.unsqueeze(2) - dist.unsqueeze(1) + self.margin  # gap[i, j, k] = D_ij - D_ik + m
        mined = pos.unsqueeze(2) & neg.unsqueeze(1) & (gap.detach() >= 0)  # Eq. 19
        if self.mining == "hard":  # Eq. 20
            mined = mined & hard_triplet_mask(dist, labels)
        scope = self.normalization_scope
        weights = hinge_weights(gap, mined, self.weighting, self.exponent, self.normalize_weights, scope)
        loss = (weights * torch.relu(gap)).sum()
        return loss if self.normalize_weights and scope == "batch" else loss / len(labels)
