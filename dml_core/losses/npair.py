"""Multi-class N-pair loss (Sohn 2016), with anml's "improved" scale/offset (Eq. 31) as options."""

from __future__ import annotations

from typing import Literal

import torch
from torch import Tensor

from dml_core.losses.base import REDUCTIONS, MetricLoss, check_choice, masked_logsumexp, zero_loss

NEGATIVE_SETS = ("pairs", "all")
ANCHOR_RULES = ("one_per_class", "all")


def npair_indices(labels: Tensor) -> tuple[Tensor, Tensor]:
    """One (anchor, positive) pair per class with two or more samples: its first and second occurrence.

    This is the pair pytorch-metric-learning's ``NPairsLoss`` picks from a general batch.

    >>> [t.tolist() for t in npair_indices(torch.tensor([3, 1, 3, 1, 1, 2]))]
    [[0, 1], [2, 3]]
    """
    n = len(labels)
    same = labels.unsqueeze(0) == labels.unsqueeze(1)
    earlier = torch.tril(torch.ones(n, n, dtype=torch.bool, device=labels.device), diagonal=-1)
    occurrence = (same & earlier).sum(dim=1)  # how many same-label samples come before each sample
    # The one host sync on CUDA: how many classes have a pair (the loss averages over the pairs).
    seconds = torch.nonzero(occurrence == 1, as_tuple=True)[0]
    # Map each second occurrence to its class's first occurrence; keep classes that have one.
    first_of_second = torch.argmax((same[seconds] & (occurrence == 0)).int(), dim=1)
    order = torch.argsort(first_of_second)
    return first_of_second[order], seconds[order]


def every_sample_indices(labels: Tensor) -> tuple[Tensor, Tensor]:
    """Every sample of a class with two or more samples is an anchor; its positive is the next sample of its
    class in batch order, the class's last sample taking its first (a cycle through the class). Each sample is
    then exactly one anchor's positive. Anchors in batch order.

    >>> [t.tolist() for t in every_sample_indices(torch.tensor([3, 1, 3, 1, 1, 2]))]
    [[0, 1, 2, 3, 4], [2, 3, 0, 4, 1]]
    """
    n = len(labels)
    same = labels.unsqueeze(0) == labels.unsqueeze(1)
    following = same & torch.triu(torch.ones(n, n, dtype=torch.bool, device=labels.device), diagonal=1)
    # argmax gives the first True: the next sample of the class, or for the class's last sample the class's first.
    positive = torch.where(following.any(dim=1), following.int().argmax(dim=1), same.int().argmax(dim=1))
    # The one host sync on CUDA: how many anchors there are (the loss averages over them).
    anchors = torch.nonzero(same.sum(dim=1) >= 2).squeeze(1)
    return anchors, positive[anchors]


class NPairLoss(MetricLoss):
    """Sohn 2016, Eq. 3 with the inner product, plus L2 regularisation of the embeddings:

        L = 1/N sum_i (1/gamma) log(1 + sum_{j in neg(i)} exp(gamma (f_i.f_j - lambda - f_i.f_i+)))
            + l2_weight * mean over the 2N pair members of ||f||^2 (every anchor, once, with ``anchors="all"``)

    ``anchors``:
        "one_per_class" Sohn's N-pair tuple: one pair per class (``npair_indices``), the other samples of a
                        class are ignored;
        "all"           cgml's Eq. 6 (a sum over i = 1..N of the batch): every sample of a class with two or
                        more samples is an anchor, its positive the next sample of its class
                        (``every_sample_indices``: Eq. 6 gives each anchor one positive x_i+ without saying
                        which; the sampler's class blocks are in random order, so "next" is a random one).
    ``negatives``:
        "pairs" Sohn's: the positives f_j+ of the other classes' anchors (with ``anchors="all"`` every sample
                of another class with two or more samples, since each sample is some anchor's positive);
        "all"   cgml's Eq. 6: every other-class sample in the batch.
    ``reduction``: "mean" is the 1/N above; "sum" drops it (cgml's Eq. 6 as printed, a sum over i = 1..N; reading
    cgml.reduction); the L2 regulariser is a mean either way (it is Sohn's, not part of Eq. 6).
    ``scale`` (gamma) and ``offset`` (lambda) are anml's improved N-pair (Eq. 31); gamma=1, lambda=0 is
    Sohn's. Embeddings are not normalised (Sohn regularises their norm instead).

    Regulariser: Sohn's weight 0.002 (also TensorFlow's ``npairs_loss`` default). TensorFlow computes
    0.25 * w * (mean ||a||^2 + mean ||p||^2), i.e. half of this term for the same w. pytorch-metric-learning's
    ``NPairsLoss`` adds none unless it is given an ``embedding_regularizer``, so parity with it holds for
    ``l2_weight=0``.
    ``last_terms``: "npair", "l2".
    """

    name = "npair"

    def __init__(
        self,
        l2_weight: float = 0.002,
        negatives: str = "pairs",
        scale: float = 1.0,
        offset: float = 0.0,
        anchors: Literal["one_per_class", "all"] = "one_per_class",
        reduction: str = "mean",
    ) -> None:
        super().__init__()
        check_choice(negatives, NEGATIVE_SETS, self.name, "negatives")
        check_choice(anchors, ANCHOR_RULES, self.name, "anchors")
        check_choice(reduction, REDUCTIONS, self.name, "reduction")
        self.reduction = reduction
        self.l2_weight, self.negatives, self.scale, self.offset = l2_weight, negatives, scale, offset
        self.anchors = anchors

    def compute_loss(self, embeddings: Tensor, labels: Tensor) -> Tensor:
        pick = npair_indices if self.anchors == "one_per_class" else every_sample_indices
        anchor_idx, positive_idx = pick(labels)
        if len(anchor_idx) == 0:
            return zero_loss(embeddings)
        anchors, positives = embeddings[anchor_idx], embeddings[positive_idx]
        candidate_idx = positive_idx if self.negatives == "pairs" else torch.arange(len(labels), device=labels.device)
        candidates = embeddings[candidate_idx]
        negative = labels[anchor_idx].unsqueeze(1) != labels[candidate_idx].unsqueeze(0)
        pos_logit = self.scale * (anchors * positives).sum(dim=1)
        neg_logits = self.scale * (anchors @ candidates.T - self.offset)
        # log(1 + sum exp(z_neg - z_pos)) = log(exp(z_pos) + sum exp(z_neg)) - z_pos
        logits = torch.cat([pos_logit.unsqueeze(1), neg_logits], dim=1)
        keep = torch.cat([torch.ones_like(negative[:, :1]), negative], dim=1)
        per_anchor = (masked_logsumexp(logits, keep) - pos_logit) / self.scale
        npair = per_anchor.mean() if self.reduction == "mean" else per_anchor.sum()
        l2 = torch.cat([anchors, positives]).pow(2).sum(dim=1).mean()
        self.record_terms(npair=npair, l2=l2)
        return npair + self.l2_weight * l2
