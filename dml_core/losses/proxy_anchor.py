"""Proxy-Anchor loss (Kim, Kim, Cho and Kwak 2020)."""

from __future__ import annotations

import torch.nn.functional as F
from torch import Tensor

from dml_core.losses.base import MetricLoss, ProxyInit, make_proxies, masked_logsumexp, pairwise_matrix


class ProxyAnchorLoss(MetricLoss):
    """Kim et al. 2020, Eq. 4, with cosine similarity s between embeddings and proxies:

        L = 1/|P+| sum_{p in P+} log(1 + sum_{x in X_p+} exp(-alpha (s(x, p) - delta)))
          + 1/|P|  sum_{p in P}  log(1 + sum_{x in X_p-} exp( alpha (s(x, p) + delta)))

    P+ = proxies with a positive in the batch, P = all proxies. Defaults alpha=32, delta=0.1 (the paper's;
    drml's official code uses 64 / 0.2 for DRML-PA). Same definition as pytorch-metric-learning.
    Proxies are ``self.proxies``, started by ``proxy_init`` (``base.PROXY_INITS``; by default Kaiming-normal in
    fan-out mode, the ProxyAnchor authors' rule); the paper trains them with a 100x learning rate: use a parameter
    group ``{"params": loss.parameters(), "lr": proxy_lr}``. ``last_terms``: "pos", "neg".
    """

    name = "proxy_anchor"

    def __init__(
        self,
        num_classes: int,
        embedding_dim: int,
        alpha: float = 32.0,
        delta: float = 0.1,
        proxy_init: ProxyInit = "kaiming_normal_fan_out",
    ) -> None:
        super().__init__()
        self.proxies = make_proxies(num_classes, embedding_dim, self.name, proxy_init)
        self.alpha, self.delta = alpha, delta

    def compute_loss(self, embeddings: Tensor, labels: Tensor) -> Tensor:
        sim = pairwise_matrix(embeddings, self.proxies.to(embeddings.dtype), "cosine")  # (N, C)
        positive = F.one_hot(labels, len(self.proxies)).bool()
        pos_terms = masked_logsumexp(-self.alpha * (sim - self.delta), positive, dim=0, add_one=True)
        neg_terms = masked_logsumexp(self.alpha * (sim + self.delta), ~positive, dim=0, add_one=True)
        with_positives = positive.any(dim=0).sum().clamp(min=1)
        pos_loss, neg_loss = pos_terms.sum() / with_positives, neg_terms.mean()
        self.record_terms(pos=pos_loss, neg=neg_loss)
        return pos_loss + neg_loss
