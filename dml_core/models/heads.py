"""Heads: the new layers on top of pooled backbone features.

A head's ``levels`` names the backbone levels it reads: ``None`` means the pooled final feature (N, d'), a
tuple means a dict ``{level: (N, C_level)}`` of pooled intermediate maps (``EmbeddingModel`` provides either).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Literal

import torch
import torch.nn.functional as F
from torch import nn


class LinearEmbedding(nn.Module):
    """One fully connected layer from the pooled feature to the embedding, optionally L2-normalised."""

    levels = None

    def __init__(self, in_dim: int, dim: int, normalize: bool = True) -> None:
        super().__init__()
        self.fc = nn.Linear(in_dim, dim)
        self.normalize = normalize

    def forward(self, pooled: torch.Tensor) -> torch.Tensor:
        embedding = self.fc(pooled)
        return F.normalize(embedding, dim=1) if self.normalize else embedding


class MultiLevelFusionHead(nn.Module):
    """gpw's multi-level fusion: one FC per backbone level on its pooled map, outputs concatenated.

    With d outputs per level and three levels the embedding has 3d dimensions. ``normalize`` L2-normalises the
    concatenated vector (gpw: all features are normalised before distances); ``normalize_levels`` also
    normalises each level's part first (the paper does not say which; both are offered).
    """

    def __init__(
        self, level_dims: Mapping[str, int], dim: int, normalize: bool = True, normalize_levels: bool = False
    ) -> None:
        super().__init__()
        self.levels = tuple(level_dims)
        self.fcs = nn.ModuleDict({level: nn.Linear(channels, dim) for level, channels in level_dims.items()})
        self.normalize = normalize
        self.normalize_levels = normalize_levels

    def forward(self, pooled_levels: Mapping[str, torch.Tensor]) -> torch.Tensor:
        parts = [self.fcs[level](pooled_levels[level]) for level in self.levels]
        if self.normalize_levels:
            parts = [F.normalize(part, dim=1) for part in parts]
        embedding = torch.cat(parts, dim=1)
        return F.normalize(embedding, dim=1) if self.normalize else embedding


@dataclass
class RelationalOutput:
    """Everything DRML's three losses need from one forward pass.

    embedding: z, the relation-aware embedding (N, K*dim), Eq. 9.
    individual: g_k(y), the K individual features (N, K, dim); J_ensem trains them with the trunk.
    reconstruction_error: ||p_k(g_k(y)) - y||_2 (N, K), Eq. 2; its gradient reaches only the decoders.
    """

    embedding: torch.Tensor
    individual: torch.Tensor
    reconstruction_error: torch.Tensor

    @property
    def branch_assignment(self) -> torch.Tensor:
        """k*(x) = argmin_k of the reconstruction error (N,), Eq. 3."""
        return self.reconstruction_error.argmin(dim=1)


class RelationalHead(nn.Module):
    """DRML's adaptive ensemble and relational module (Zheng et al., ICCV 2021, Sec. 3; papers/drml/method.md).

    On the pooled trunk feature y (N, d'):
    - K individual-feature FCs g_k: d' -> dim; K decoders p_k: dim -> d' (reconstruct y);
    - 2K meta-relational FCs a_k, b_k: d' -> dim; edge feature R_ij = a_i(y) - b_j(y) (Eq. 5);
    - a relational-score FC s: dim -> 1 and r_ji = s(R_ji) / sum_j s(R_ji) (Eq. 7), made non-negative by
      ``score_activation``: "relu" (as the official code; 0/0 is taken as 0) or "softmax" (exp, then ratio);
    - message M_i = sum_j r_ji g_j (Eq. 6); one shared updater FC U: 2*dim -> dim, g_i^u = U([g_i; M_i])
      (Eq. 8);
    - z = concat(g_1^u, ..., g_K^u) (Eq. 9).
    Gradient routing (Sec. 3.3): decoders see detached g_k and y, so the reconstruction loss trains only them.
    With ``detach_relational_inputs`` (the paper: J_emb is not backpropagated through G) the relational module
    reads detached y and g_k; the official code does not detach the nodes, hence the switch.
    ``identity_updater_init`` starts U as [I | 0] (official code); the paper does not say.
    """

    levels = None

    def __init__(
        self,
        in_dim: int,
        num_features: int = 4,
        dim: int = 128,
        score_activation: Literal["relu", "softmax"] = "relu",
        detach_relational_inputs: bool = True,
        identity_updater_init: bool = False,
        normalize: bool = False,
    ) -> None:
        super().__init__()
        if score_activation not in ("relu", "softmax"):
            raise ValueError(f"score_activation: expected 'relu' or 'softmax', found {score_activation!r}")
        self.num_features = num_features
        self.individual = nn.ModuleList(nn.Linear(in_dim, dim) for _ in range(num_features))
        self.decoders = nn.ModuleList(nn.Linear(dim, in_dim) for _ in range(num_features))
        self.meta_a = nn.ModuleList(nn.Linear(in_dim, dim) for _ in range(num_features))
        self.meta_b = nn.ModuleList(nn.Linear(in_dim, dim) for _ in range(num_features))
        self.score = nn.Linear(dim, 1)
        self.updater = nn.Linear(2 * dim, dim)
        if identity_updater_init:
            with torch.no_grad():
                self.updater.weight.zero_()
                self.updater.weight[:, :dim] = torch.eye(dim)
                self.updater.bias.zero_()
        self.score_activation = score_activation
        self.detach_relational_inputs = detach_relational_inputs
        self.normalize = normalize

    def forward(self, pooled: torch.Tensor) -> RelationalOutput:
        individual = torch.stack([fc(pooled) for fc in self.individual], dim=1)  # (N, K, dim)
        reconstruction = torch.stack(
            [decoder(individual[:, k].detach()) for k, decoder in enumerate(self.decoders)], dim=1
        )
        reconstruction_error = (reconstruction - pooled.detach().unsqueeze(1)).norm(dim=2)  # (N, K)

        trunk, nodes = pooled, individual
        if self.detach_relational_inputs:
            trunk, nodes = pooled.detach(), individual.detach()
        relation_a = torch.stack([fc(trunk) for fc in self.meta_a], dim=1)  # (N, K, dim)
        relation_b = torch.stack([fc(trunk) for fc in self.meta_b], dim=1)
        # edges[n, j, i] = R_ji = a_j - b_i: the edge from source j to target i.
        edges = relation_a.unsqueeze(2) - relation_b.unsqueeze(1)  # (N, K_source, K_target, dim)
        scores = self.score(edges).squeeze(-1)  # (N, K_source, K_target)
        weights = self._normalize_scores(scores)
        messages = torch.einsum("nji,njd->nid", weights, nodes)  # M_i = sum_j r_ji g_j
        updated = self.updater(torch.cat([nodes, messages], dim=2))  # (N, K, dim), U shared by all nodes
        embedding = updated.flatten(start_dim=1)
        if self.normalize:
            embedding = F.normalize(embedding, dim=1)
        return RelationalOutput(embedding, individual, reconstruction_error)

    def _normalize_scores(self, scores: torch.Tensor) -> torch.Tensor:
        """r_ji: scores made non-negative and normalised over the source index j (dim 1)."""
        if self.score_activation == "softmax":
            return scores.softmax(dim=1)
        positive = scores.relu()
        total = positive.sum(dim=1, keepdim=True)
        return positive / total.clamp_min(torch.finfo(scores.dtype).tiny)
