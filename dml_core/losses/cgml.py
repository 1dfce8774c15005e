"""CGML: the graph-consistency regulariser of Chen, Li, Yan, Wang and Zhang (AAAI 2021), Eqs. 1-4.

``GraphConsistencyLoss`` wraps a built base loss L_m (triplet, npair, binomial, ranked_list, multi_similarity,
...) and adds lambda times the graph-consistency term of two class-aligned graphs.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, Literal

import torch
import torch.nn.functional as F
from torch import Tensor, nn

from dml_core.errors import InputError
from dml_core.losses.base import BaseLossBuilder, CompositeLoss, check_choice, pairwise_matrix
from dml_core.losses.damlrrm import split_streams

FORMS = ("upper_bound", "frobenius")
GRAPHS = ("two_batches", "halves")
BASE_ON = ("union", "each")
GRAPH_ON = ("embeddings", "normalized")
BANDWIDTH_RULES = ("median",)


def rbf_adjacency(x: Tensor, bandwidth: float | Tensor) -> Tensor:
    """S_ij = exp(-||x_i - x_j||^2 / sigma) (Section 3.1), sigma = ``bandwidth``; the diagonal is 1.

    >>> rbf_adjacency(torch.tensor([[0.0], [1.0]]), bandwidth=2.0)
    tensor([[1.0000, 0.6065],
            [0.6065, 1.0000]])
    """
    return torch.exp(-pairwise_matrix(x, x, "squared_euclidean") / bandwidth)


def median_bandwidth(first: Tensor, second: Tensor) -> Tensor:
    """sigma from the batch's own scale: the median squared distance between two nodes of the same graph, over
    both graphs (one sigma for S' and S'', so that they stay comparable), detached (a scale, not a path for the
    gradient). A typical pair then gets S_ij = e^-1 whatever the embeddings' norm.

    >>> median_bandwidth(torch.tensor([[0.0], [1.0], [3.0]]), torch.tensor([[0.0], [2.0], [2.0]]))
    tensor(4.)
    """
    rows, cols = torch.triu_indices(first.shape[0], first.shape[0], offset=1, device=first.device)
    squared = [pairwise_matrix(x, x, "squared_euclidean")[rows, cols] for x in (first.detach(), second.detach())]
    # an all-equal batch has median 0: keep sigma positive (S is then all ones, as for any sigma)
    return torch.quantile(torch.cat(squared), 0.5).clamp_min(torch.finfo(first.dtype).tiny)


def graph_consistency(first: Tensor, second: Tensor, bandwidth: float | Tensor, form: str = "upper_bound") -> Tensor:
    """The graph-consistency term of two class-aligned graphs X' = ``first``, X'' = ``second`` (rows = nodes,
    row r of both from the same class).

    "upper_bound": Eq. 3, ||S' X'^T - S'' X''^T||_F (the plain Frobenius norm: the term the paper trains);
    "frobenius":   Eq. 1, ||S' - S''||_F^2.
    Both are 0 when the two graphs are the same.

    >>> x = torch.tensor([[0.0], [1.0]])
    >>> graph_consistency(x, x, 1.0)
    tensor(0.)
    """
    check_choice(form, FORMS, "cgml", "form")
    s1, s2 = rbf_adjacency(first, bandwidth), rbf_adjacency(second, bandwidth)
    if form == "frobenius":
        return (s1 - s2).pow(2).sum()
    # Frobenius norm written out so that its gradient at a zero difference is 0 rather than NaN.
    diff = s1 @ first - s2 @ second
    squared = diff.pow(2).sum()
    return torch.where(squared > 0, squared, torch.ones_like(squared)).sqrt() * (squared > 0)


class GraphConsistencyLoss(CompositeLoss):
    """L = L_m + lambda L_gc (Eq. 4): a base loss plus the graph-consistency regulariser.

    ``base`` is the built base loss L_m (a recipe names it and gives its parameters: ``from_recipe``). The batch
    holds two class-aligned graphs:
      ``graphs="two_batches"`` (default) the paired sampler's ``[A | B]`` (split by ``group_sizes``), each m
        classes x n images in the same class order, drawn independently (Proposition 1; the introduction's
        "select m classes with n/m instances each class for two times");
      ``graphs="halves"`` one class-blocked PK batch whose consecutive rows pair up (rows 0, 2, 4, ... form
        X', rows 1, 3, 5, ... form X''), i.e. the two halves of each class block; needs an even number of
        images per class. Keeps the stated batch size of 130 as the whole iteration.
    ``base_on``: "union" applies L_m once to the whole batch; "each" averages L_m over the two graphs.
    The kernel, which the paper leaves open (sigma is not given):
      ``bandwidth`` is the RBF's sigma: a number, or "median" for ``median_bandwidth`` (the batch's median
        squared within-graph distance, recomputed every batch). 1.0 spreads S over (e^-4, 1] for L2-normalised
        embeddings, but on N-pair's unnormalised embeddings (far from unit norm: papers/cgml/method.md) it makes S
        the identity.
      ``graph_on``: "embeddings" builds the term on the embeddings as the base loss sees them (normalised or
        not, as the model's ``normalize`` says); "normalized" L2-normalises them first (S and the X of
        S X^T alike; the base loss still sees them as they are).
    ``form``: see ``graph_consistency``. lambda_ = 0 is the plain base loss (the paper's baselines); with
    ``graphs="halves"`` it runs on one PK batch (the paper's single minibatch of 130 = 13 x 10).
    ``last_terms``: "base", "graph_consistency", and "bandwidth" (the sigma used) under "median".
    """

    name = "cgml"
    aliases = ("graph_consistency",)  # recipes say "cgml"; the term is "graph consistency"

    def __init__(
        self,
        base: nn.Module,
        lambda_: float = 0.002,
        bandwidth: float | Literal["median"] = 1.0,
        form: str = "upper_bound",
        graphs: str = "two_batches",
        base_on: str = "union",
        group_sizes: tuple[int, ...] | None = None,
        graph_on: Literal["embeddings", "normalized"] = "embeddings",
    ) -> None:
        super().__init__()
        if not isinstance(base, nn.Module):
            raise InputError(
                f"cgml: base must be a built loss; got {base!r} (build_loss('cgml', base=NAME, ...) builds it by name)"
            )
        check_choice(form, FORMS, self.name, "form")
        check_choice(graphs, GRAPHS, self.name, "graphs")
        check_choice(base_on, BASE_ON, self.name, "base_on")
        check_choice(graph_on, GRAPH_ON, self.name, "graph_on")
        if isinstance(bandwidth, str):
            check_choice(bandwidth, BANDWIDTH_RULES, self.name, "bandwidth")
        elif isinstance(bandwidth, bool) or not isinstance(bandwidth, int | float) or not bandwidth > 0:
            raise InputError(
                f"cgml: bandwidth must be positive or one of {', '.join(BANDWIDTH_RULES)}; got {bandwidth}"
            )
        self.base = base
        self.lambda_, self.bandwidth, self.form, self.graphs, self.base_on = lambda_, bandwidth, form, graphs, base_on
        self.graph_on = graph_on
        self.group_sizes = None if group_sizes is None else tuple(group_sizes)

    @classmethod
    def from_recipe(
        cls,
        build_base: BaseLossBuilder,
        base: str,
        base_params: Mapping[str, Any] | None = None,
        num_classes: int | None = None,
        embedding_dim: int | None = None,
        **options: Any,
    ) -> GraphConsistencyLoss:
        """cgml as a recipe writes it: ``base`` names the base loss, ``base_params`` gives its parameters; the base
        loss gets the run's ``num_classes`` and ``embedding_dim`` where it takes them."""
        return cls(build_base(base, base_params, num_classes, embedding_dim), **options)

    def split_graphs(self, embeddings: Tensor, labels: Tensor) -> tuple[tuple[Tensor, Tensor], tuple[Tensor, Tensor]]:
        """(X', labels'), (X'', labels'') from the batch, as ``graphs`` says."""
        if self.graphs == "halves":
            if embeddings.shape[0] % 2:
                raise InputError(f"cgml: graphs 'halves' needs an even batch size; got {embeddings.shape[0]}")
            first, second = (embeddings[0::2], labels[0::2]), (embeddings[1::2], labels[1::2])
        else:
            first, second = split_streams(embeddings, labels, self.group_sizes, "cgml")
            if first[0].shape[0] != second[0].shape[0]:
                raise InputError(
                    f"cgml: the two graphs need the same number of nodes; got {first[0].shape[0]} and "
                    f"{second[0].shape[0]} (use the paired sampler)"
                )
        # The alignment is checked on every device, so a misaligned batch fails the same way everywhere. On CUDA it
        # waits for the labels (a host sync of two short integer vectors per step): an error that names the problem
        # needs their values on the host, and a device-side assert would end the process without naming it.
        if not torch.equal(first[1], second[1]):
            raise InputError("cgml: the two graphs are not class-aligned (row r of both must share its class)")
        return first, second

    def graph_inputs(self, x1: Tensor, x2: Tensor) -> tuple[Tensor, Tensor, float | Tensor]:
        """X', X'' and sigma as the term uses them: normalised or not (``graph_on``), sigma per ``bandwidth``."""
        if self.graph_on == "normalized":
            x1, x2 = F.normalize(x1, dim=1), F.normalize(x2, dim=1)
        return x1, x2, median_bandwidth(x1, x2) if self.bandwidth == "median" else self.bandwidth

    def compute_loss(self, embeddings: Tensor, labels: Tensor) -> Tensor:
        (x1, y1), (x2, y2) = self.split_graphs(embeddings, labels)
        if self.base_on == "union":
            base = self.base(embeddings, labels)
        else:
            base = (self.base(x1, y1) + self.base(x2, y2)) / 2
        x1, x2, sigma = self.graph_inputs(x1, x2)
        regulariser = graph_consistency(x1, x2, sigma, self.form)
        bandwidth = {"bandwidth": sigma} if isinstance(sigma, Tensor) else {}
        self.record_terms(base=base, graph_consistency=regulariser, **bandwidth)
        return base + self.lambda_ * regulariser
