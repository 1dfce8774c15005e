"""Multi-class N-pair loss (Sohn 2016), with anml's "improved" scale/offset (Eq. 31) as options."""

from __future__ import annotations

import torch
from torch import Tensor, nn

from dml_core.losses.base import check_batch, check_choice, masked_logsumexp, zero_loss

NEGATIVE_SETS = ("pairs", "all")


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
    seconds = torch.nonzero(occurrence == 1, as_tuple=True)[0]
    # Map each second occurrence to its class's first occurrence; keep classes that have one.
    first_of_second = torch.argmax((same[seconds] & (occurrence == 0)).int(), dim=1)
    order = torch.argsort(first_of_second)
    return first_of_second[order], seconds[order]


class NPairLoss(nn.Module):
    """Sohn 2016, Eq. 3 with the inner product, plus L2 regularisation of the embeddings:

        L = 1/N sum_i (1/gamma) log(1 + sum_{j in neg(i)} exp(gamma (f_i.f_j - lambda - f_i.f_i+)))
            + l2_weight * mean over the 2N pair members of ||f||^2

    One pair per class (``npair_indices``); other samples of a class are ignored. ``negatives``:
        "pairs" Sohn's: the positives f_j+ of the other N-1 pairs;
        "all"   cgml's Eq. 6: every other-class sample in the batch.
    ``scale`` (gamma) and ``offset`` (lambda) are anml's improved N-pair (Eq. 31); gamma=1, lambda=0 is
    Sohn's. Embeddings are not normalised (Sohn regularises their norm instead).

    Regulariser: Sohn's weight 0.002 (also TensorFlow's ``npairs_loss`` default). TensorFlow computes
    0.25 * w * (mean ||a||^2 + mean ||p||^2), i.e. half of this term for the same w. pytorch-metric-learning
    has no regulariser built in, so parity with it holds only for ``l2_weight=0``.
    ``last_terms``: "npair", "l2".
    """

    def __init__(
        self, l2_weight: float = 0.002, negatives: str = "pairs", scale: float = 1.0, offset: float = 0.0
    ) -> None:
        super().__init__()
        check_choice(negatives, NEGATIVE_SETS, "npair", "negatives")
        self.l2_weight, self.negatives, self.scale, self.offset = l2_weight, negatives, scale, offset
        self.last_terms: dict[str, Tensor] = {}

    def forward(self, embeddings: Tensor, labels: Tensor) -> Tensor:
        check_batch(embeddings, labels, "npair")
        anchor_idx, positive_idx = npair_indices(labels)
        if len(anchor_idx) == 0:
            return zero_loss(embeddings)
        anchors, positives = embeddings[anchor_idx], embeddings[positive_idx]
        if self.negatives == "pairs":
            candidates = positives
            negative = ~torch.eye(len(anchor_idx), dtype=torch.bool, device=embeddings.device)
        else:
            candidates = embeddings
            negative = labels[anchor_idx].unsqueeze(1) != labels.unsqueeze(0)
        pos_logit = self.scale * (anchors * positives).sum(dim=1)
        neg_logits = self.scale * (anchors @ candidates.T - self.offset)
        # log(1 + sum exp(z_neg - z_pos)) = log(exp(z_pos) + sum exp(z_neg)) - z_pos
        logits = torch.cat([pos_logit.unsqueeze(1), neg_logits], dim=1)
        keep = torch.cat([torch.ones_like(negative[:, :1]), negative], dim=1)
        npair = ((masked_logsumexp(logits, keep) - pos_logit) / self.scale).mean()
        l2 = torch.cat([anchors, positives]).pow(2).sum(dim=1).mean()
        self.last_terms = {"npair": npair.detach(), "l2": l2.detach()}
        return npair + self.l2_weight * l2
