"""ProxyNCA loss (Movshovitz-Attias, Toshev, Leung, Ioffe and Singh 2017)."""

from __future__ import annotations

import torch
import torch.nn.functional as F
from torch import Tensor

from dml_core.losses.base import MetricLoss, make_proxies, masked_logsumexp, pairwise_matrix


class ProxyNCALoss(MetricLoss):
    """Movshovitz-Attias et al. 2017, Eq. 7, one proxy per class, squared Euclidean distance between the
    L2-normalised embedding x and L2-normalised proxies p:

        L(x) = -log( exp(-s d(x, p_y)) / sum_{z != y} exp(-s d(x, p_z)) )

    averaged over the batch, with ``scale`` s = 1 in the paper. The paper's denominator leaves out the
    positive proxy (``exclude_positive=True``), so the loss can go negative. pytorch-metric-learning's
    ``ProxyNCALoss`` (and ProxyNCA++) keep it in, a softmax cross-entropy over all proxies; set
    ``exclude_positive=False`` for that form, which the parity tests check.

    ``offset`` (lambda >= 0, default 0) is added to every *negative* proxy's distance inside the softmax, as
    anml's improved N-pair (Eq. 31) adds its lambda; anml's improved Proxy-NCA (``anml.ImprovedProxyNCALoss``)
    uses it. With ``exclude_positive=True`` it only shifts the loss by a constant.

    Proxies are ``self.proxies`` (Kaiming-normal); give them their own learning rate with a parameter
    group: ``{"params": loss.parameters(), "lr": proxy_lr}``.
    """

    name = "proxy_nca"

    def __init__(
        self,
        num_classes: int,
        embedding_dim: int,
        scale: float = 1.0,
        exclude_positive: bool = True,
        offset: float = 0.0,
    ) -> None:
        super().__init__()
        self.proxies = make_proxies(num_classes, embedding_dim, self.name)
        self.scale, self.exclude_positive, self.offset = scale, exclude_positive, offset

    def compute_loss(self, embeddings: Tensor, labels: Tensor) -> Tensor:
        proxies = F.normalize(self.proxies.to(embeddings.dtype), dim=1)
        dist = pairwise_matrix(F.normalize(embeddings, dim=1), proxies, "squared_euclidean")
        positive = F.one_hot(labels, len(proxies)).bool()
        logits = -self.scale * (dist + self.offset * ~positive)
        pos_logit = logits.gather(1, labels.unsqueeze(1)).squeeze(1)
        if self.exclude_positive:
            return (masked_logsumexp(logits, ~positive) - pos_logit).mean()
        return (torch.logsumexp(logits, dim=1) - pos_logit).mean()
