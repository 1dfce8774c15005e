"""DRML's adaptive ensemble and relational module (Zheng et al., "Deep Relational Metric Learning", ICCV 2021,
Sec. 3): the head on the pooled trunk feature whose output ``dml_core.losses.drml`` trains.

Where the paper is silent or the authors' released code (github zbr17/DRML on the gedml library) differs, the
choice is a parameter whose default is the paper-text reading; the released code's choices are named beside
each one (papers/drml/method.md, section 4, lists every difference).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

import torch
import torch.nn.functional as F
from torch import nn

from dml_core.errors import InputError


@dataclass
class RelationalOutput:
    """Everything DRML's three losses need from one forward pass.

    embedding: z, the relation-aware embedding (N, K*dim), Eq. 9.
    individual: g_k(y), the K individual features (N, K, dim); J_ensem trains them with the trunk.
    reconstruction_error: how far p_k(g_k(y)) is from what it reconstructs (N, K), Eq. 2 (the L2 norm, or the
        mean squared error per dimension: the head's ``reconstruction_measure``); its gradient reaches only the
        decoders.
    """

    embedding: torch.Tensor
    individual: torch.Tensor
    reconstruction_error: torch.Tensor

    @property
    def branch_assignment(self) -> torch.Tensor:
        """k*(x) = argmin_k of the reconstruction error (N,), Eq. 3."""
        return self.reconstruction_error.argmin(dim=1)


class RelationalHead(nn.Module):
    """DRML's head on the pooled trunk feature y (N, d'):

    - K individual-feature FCs g_k -> dim; K decoders p_k reconstruct what g_k read;
    - 2K meta-relational FCs a_k, b_k -> dim; edge feature R_ij = a_i(y) - b_j(y) (Eq. 5);
    - a relational-score FC s: dim -> 1 and r_ji = s(R_ji) / sum_j s(R_ji) (Eq. 7), made non-negative by
      ``score_activation``: "relu" (as the released code; 0/0 is taken as 0) or "softmax" (exp, then ratio);
    - message M_i = sum_j r_ji g_j (Eq. 6); one shared updater FC U: 2*dim -> dim, g_i^u = U([g_i; M_i])
      (Eq. 8);
    - z = concat(g_1^u, ..., g_K^u) (Eq. 9).
    Gradient routing (Sec. 3.3): decoders see detached g_k and y, so the reconstruction loss trains only them.

    Choices (paper text = default; the released code's value in brackets):
    - ``node_input``: "whole", every g_k, a_k, b_k reads all of y and p_k reconstructs y (Eq. 1-2); ["chunks"]:
      y is cut into K equal chunks (1024 = 4 x 256 for BN-Inception) and branch k reads and reconstructs chunk k.
    - ``normalize_nodes``: L2-normalise each g_k before the decoders, the message passing and J_ensem [True].
    - ``identity_updater_init``: U starts as [I | 0] with zero bias, so z starts as the concatenated nodes [True];
      False keeps PyTorch's default initialisation (the paper says nothing).
    - ``detach_relational_inputs``: True (the paper: J_emb is not back-propagated through G) feeds the relational
      module detached y and g_k; ["edges"]: only the meta-relational FCs read a detached y, the nodes are not
      detached, so J_emb reaches g_k and the trunk through them; False detaches nothing.
    - ``reconstruction_measure``: "norm", ||p_k(g_k) - target||_2 (Eq. 2); ["mse"]: its mean squared error per
      dimension. Both route each sample the same way when the targets have one width.
    - ``layer_init``: "pytorch" (nn.Linear's default) or ["kaiming_fan_out"]: kaiming-normal weights (fan-out
      mode) and zero biases for g_k, p_k, a_k, b_k and s.
    - ``relational_module``: False builds the adaptive ensemble alone (Table 2's AEL-PA; the released code's
      ``multi_embedder.py``): no a_k, b_k, s or U, and z is the concatenated individual features g_k. A
      "w/o J_emb" run is not the same: its U and its z proxies still exist and drift under weight decay.
    """

    levels = None

    def __init__(
        self,
        in_dim: int,
        num_features: int = 4,
        dim: int = 128,
        score_activation: Literal["relu", "softmax"] = "relu",
        detach_relational_inputs: bool | Literal["edges"] = True,
        identity_updater_init: bool = False,
        normalize: bool = False,
        node_input: Literal["whole", "chunks"] = "whole",
        normalize_nodes: bool = False,
        reconstruction_measure: Literal["norm", "mse"] = "norm",
        layer_init: Literal["pytorch", "kaiming_fan_out"] = "pytorch",
        relational_module: bool = True,
    ) -> None:
        super().__init__()
        if score_activation not in ("relu", "softmax"):
            raise ValueError(f"score_activation: expected 'relu' or 'softmax', found {score_activation!r}")
        _check("detach_relational_inputs", detach_relational_inputs, (True, False, "edges"))
        _check("node_input", node_input, ("whole", "chunks"))
        _check("reconstruction_measure", reconstruction_measure, ("norm", "mse"))
        _check("layer_init", layer_init, ("pytorch", "kaiming_fan_out"))
        if node_input == "chunks" and in_dim % num_features:
            raise InputError(
                f"relational head: node_input 'chunks' needs the pooled feature ({in_dim}) to split into "
                f"num_features ({num_features}) equal chunks"
            )
        self.num_features = num_features
        part = in_dim // num_features if node_input == "chunks" else in_dim
        self.individual = nn.ModuleList(nn.Linear(part, dim) for _ in range(num_features))
        self.decoders = nn.ModuleList(nn.Linear(dim, part) for _ in range(num_features))
        self.relational_module = relational_module
        if relational_module:
            self.meta_a = nn.ModuleList(nn.Linear(part, dim) for _ in range(num_features))
            self.meta_b = nn.ModuleList(nn.Linear(part, dim) for _ in range(num_features))
            self.score = nn.Linear(dim, 1)
            self.updater = nn.Linear(2 * dim, dim)
        relational_layers = [*self.meta_a, *self.meta_b, self.score] if relational_module else []
        if layer_init == "kaiming_fan_out":
            for layer in [*self.individual, *self.decoders, *relational_layers]:
                nn.init.kaiming_normal_(layer.weight, mode="fan_out")
                nn.init.zeros_(layer.bias)
        if identity_updater_init and relational_module:
            with torch.no_grad():
                self.updater.weight.zero_()
                self.updater.weight[:, :dim] = torch.eye(dim)
                self.updater.bias.zero_()
        self.score_activation = score_activation
        self.detach_relational_inputs = detach_relational_inputs
        self.normalize = normalize
        self.node_input, self.normalize_nodes = node_input, normalize_nodes
        self.reconstruction_measure = reconstruction_measure

    def reconstruction_targets(self, pooled: torch.Tensor) -> torch.Tensor:
        """What the decoders reconstruct: y (N, 1, d') for "whole", its K chunks (N, K, d'/K) for "chunks"."""
        if self.node_input == "chunks":
            return pooled.unflatten(1, (self.num_features, -1))
        return pooled.unsqueeze(1)

    def forward(self, pooled: torch.Tensor) -> RelationalOutput:
        # what branch k reads: y itself, or its chunk k
        part = pooled.chunk(self.num_features, dim=1) if self.node_input == "chunks" else [pooled] * self.num_features
        individual = torch.stack([fc(x) for fc, x in zip(self.individual, part, strict=True)], dim=1)  # (N, K, dim)
        if self.normalize_nodes:
            individual = F.normalize(individual, dim=2)
        reconstruction = torch.stack(
            [decoder(individual[:, k].detach()) for k, decoder in enumerate(self.decoders)], dim=1
        )
        difference = reconstruction - self.reconstruction_targets(pooled.detach())
        if self.reconstruction_measure == "mse":
            reconstruction_error = difference.pow(2).mean(dim=2)  # (N, K)
        else:
            reconstruction_error = difference.norm(dim=2)
        if not self.relational_module:
            return RelationalOutput(self._embedding(individual), individual, reconstruction_error)

        nodes = individual.detach() if self.detach_relational_inputs is True else individual
        if self.detach_relational_inputs is not False:
            part = [x.detach() for x in part]
        relation_a = torch.stack([fc(x) for fc, x in zip(self.meta_a, part, strict=True)], dim=1)  # (N, K, dim)
        relation_b = torch.stack([fc(x) for fc, x in zip(self.meta_b, part, strict=True)], dim=1)
        # edges[n, j, i] = R_ji = a_j - b_i: the edge from source j to target i.
        edges = relation_a.unsqueeze(2) - relation_b.unsqueeze(1)  # (N, K_source, K_target, dim)
        scores = self.score(edges).squeeze(-1)  # (N, K_source, K_target)
        weights = self._normalize_scores(scores)
        messages = torch.einsum("nji,njd->nid", weights, nodes)  # M_i = sum_j r_ji g_j
        updated = self.updater(torch.cat([nodes, messages], dim=2))  # (N, K, dim), U shared by all nodes
        return RelationalOutput(self._embedding(updated), individual, reconstruction_error)

    def _embedding(self, features: torch.Tensor) -> torch.Tensor:
        """z: the K features (N, K, dim) concatenated, L2-normalised when the model normalises its output."""
        embedding = features.flatten(start_dim=1)
        return F.normalize(embedding, dim=1) if self.normalize else embedding

    def _normalize_scores(self, scores: torch.Tensor) -> torch.Tensor:
        """r_ji: scores made non-negative and normalised over the source index j (dim 1)."""
        if self.score_activation == "softmax":
            return scores.softmax(dim=1)
        positive = scores.relu()
        total = positive.sum(dim=1, keepdim=True)
        return positive / total.clamp_min(torch.finfo(scores.dtype).tiny)


def _check(field: str, value: object, allowed: tuple) -> None:
    if not any(value is option or (isinstance(option, str) and value == option) for option in allowed):
        raise InputError(f"relational head: {field}: expected one of {', '.join(map(repr, allowed))}, found {value!r}")
