"""DAMLRRM: the graph loss and the shuffled loss of Xu, Yang, Deng and Zheng (CVPR 2019), Eqs. 3-6."""

from __future__ import annotations

import torch
from torch import Tensor

from dml_core.errors import InputError
from dml_core.losses.base import MetricLoss, check_choice, mean_nonzero, pairwise_matrix, zero_loss
from dml_core.losses.spanning_tree import class_forest, forest_mask

POSITIVE_PAIRS = ("tree", "all")
SHUFFLED_NEGATIVES = ("cross", "cross_and_within")
DAMLRRM_DISTANCES = ("euclidean", "squared_euclidean")


def split_streams(embeddings: Tensor, labels: Tensor, group_sizes: tuple[int, ...] | None, owner: str):
    """(first group, its labels), (second group, its labels) of a batch ``[first | second]``.

    ``group_sizes`` as a sampler reports it; ``None`` splits the batch into equal halves. A single group
    gives an empty second group.
    """
    n = embeddings.shape[0]
    sizes = (n - n // 2, n // 2) if group_sizes is None else tuple(int(s) for s in group_sizes)
    if sum(sizes) != n or not 1 <= len(sizes) <= 2:
        raise InputError(f"{owner}: group_sizes {sizes} must be one or two sizes summing to the batch size {n}")
    first = sizes[0]
    return (embeddings[:first], labels[:first]), (embeddings[first:], labels[first:])


def squared_hinge_terms(dist: Tensor, positive: Tensor, negative: Tensor, alpha: float, beta: float) -> Tensor:
    """[D - alpha + beta]_+^2 on ``positive`` pairs plus [alpha + beta - D]_+^2 on ``negative`` pairs.

    Pairs in neither mask give 0.

    >>> d = torch.tensor([[2.0, 0.5]])
    >>> squared_hinge_terms(d, torch.tensor([[True, False]]), torch.tensor([[False, True]]), 1.0, 0.25)
    tensor([[1.5625, 0.5625]])
    """
    zero = torch.zeros_like(dist)
    pos = torch.where(positive, torch.relu(dist - alpha + beta), zero)
    neg = torch.where(negative, torch.relu(alpha + beta - dist), zero)
    return pos.pow(2) + neg.pow(2)


class DAMLRRMLoss(MetricLoss):
    """L = L_g + L_s (Eq. 6) on a two-stream batch ``[neat | shuffled]`` (split by ``group_sizes``).

    Graph loss (Eq. 4), on the neat stream: per class, a minimum-cost spanning tree by Prim's algorithm
    over the embedding distances (Section 3.3; ``spanning_tree.class_forest``) gives the positive pair
    pool PP (Eq. 3); NP is every different-class pair of the neat stream. Each pair counts once:

        L_g = 1/P_g [ sum_PP [D - alpha + beta]_+^2 + sum_NP [alpha + beta - D]_+^2 ]

    Shuffled loss (Eq. 5): each shuffled sample is pulled to its nearest same-class neat sample (NN, "the
    nearest point in the tree"); negatives are pushed beyond alpha + beta. P_g, P_s: the number of violating
    pairs of each loss (a loss with none is 0). alpha = 30, beta = 0.5 are the paper's (Section 4.4) and
    assume unnormalised embeddings (normalised ones are never more than 2 apart).

    Choices where the paper is silent (papers/damlrrm/method.md, section 3), all constructor parameters:
      ``distance``          D_ij = ||f_i - f_j||_2 ("euclidean", the paper's notation) or its square.
      ``shuffled_negatives`` NP of L_s: "cross" pairs each shuffled sample with the neat stream's other-class
                            samples (NN is also "between two streams"); "cross_and_within" adds the
                            different-class pairs inside the shuffled stream.
      A shuffled sample whose class is absent from the neat stream has no NN pair, only negatives.
      The tree and NN are chosen on the current (detached) distances each iteration; the tree's root is
      each class's first neat sample (Prim's arbitrary start vertex; it does not change a tree with
      distinct weights).
    ``images_per_class``: the most images one class has in the neat stream (the PK sampler's K, filled in from
    the run's sampler), which bounds Prim's loop: K steps grow every class tree, where the neat stream's size
    (the default, None) takes m*K steps to the same forest. A batch with a larger class fails an assertion.
    Ablations: ``use_graph_loss=False`` is Table 6's OURS1 (shuffled loss only); ``use_shuffled_loss=False``
    is Table 7's OURS2 (graph loss only; a one-group batch is then allowed) and, with
    ``positive_pairs="all"``, Table 7's "Full PPs" (every positive pair instead of the tree).
    ``last_terms``: "graph", "shuffled".
    """

    name = "damlrrm"

    def __init__(
        self,
        alpha: float = 30.0,
        beta: float = 0.5,
        group_sizes: tuple[int, ...] | None = None,
        positive_pairs: str = "tree",
        use_graph_loss: bool = True,
        use_shuffled_loss: bool = True,
        shuffled_negatives: str = "cross",
        distance: str = "euclidean",
        images_per_class: int | None = None,
    ) -> None:
        super().__init__()
        check_choice(positive_pairs, POSITIVE_PAIRS, self.name, "positive_pairs")
        check_choice(shuffled_negatives, SHUFFLED_NEGATIVES, self.name, "shuffled_negatives")
        check_choice(distance, DAMLRRM_DISTANCES, self.name, "distance")
        if not (use_graph_loss or use_shuffled_loss):
            raise InputError("damlrrm: use_graph_loss and use_shuffled_loss cannot both be false")
        self.alpha, self.beta, self.distance = alpha, beta, distance
        self.group_sizes = None if group_sizes is None else tuple(group_sizes)
        self.positive_pairs, self.shuffled_negatives = positive_pairs, shuffled_negatives
        self.use_graph_loss, self.use_shuffled_loss = use_graph_loss, use_shuffled_loss
        if images_per_class is not None and images_per_class < 1:
            raise InputError(f"damlrrm: images_per_class must be at least 1, found {images_per_class}")
        self.images_per_class = images_per_class

    def graph_loss(self, neat: Tensor, labels: Tensor) -> Tensor:
        """Eq. 4 on the neat stream."""
        dist = pairwise_matrix(neat, neat, self.distance)
        same = labels.unsqueeze(0) == labels.unsqueeze(1)
        upper = torch.ones_like(same).triu(diagonal=1)
        if self.positive_pairs == "tree":
            tree = forest_mask(class_forest(dist, labels, self.images_per_class))
            positive = tree | tree.T  # each edge once: keep the upper-triangle copy
            positive = positive & upper
        else:
            positive = same & upper
        negative = ~same & upper
        return mean_nonzero(squared_hinge_terms(dist, positive, negative, self.alpha, self.beta))

    def shuffled_loss(self, neat: Tensor, neat_labels: Tensor, shuffled: Tensor, shuffled_labels: Tensor) -> Tensor:
        """Eq. 5: shuffled samples against their nearest same-class neat sample and their negatives."""
        cross = pairwise_matrix(shuffled, neat, self.distance)  # (shuffled, neat)
        same = shuffled_labels.unsqueeze(1) == neat_labels.unsqueeze(0)
        nearest = cross.detach().masked_fill(~same, float("inf")).argmin(dim=1)
        has_positive = same.any(dim=1)
        positive = torch.zeros_like(same)
        positive[torch.arange(len(shuffled), device=same.device), nearest] = True
        positive = positive & has_positive.unsqueeze(1)
        terms = squared_hinge_terms(cross, positive, ~same, self.alpha, self.beta).flatten()
        if self.shuffled_negatives == "cross_and_within":
            within = pairwise_matrix(shuffled, shuffled, self.distance)
            other = shuffled_labels.unsqueeze(0) != shuffled_labels.unsqueeze(1)
            other = other & torch.ones_like(other).triu(diagonal=1)
            within_terms = squared_hinge_terms(within, torch.zeros_like(other), other, self.alpha, self.beta)
            terms = torch.cat([terms, within_terms.flatten()])
        return mean_nonzero(terms)

    def compute_loss(self, embeddings: Tensor, labels: Tensor) -> Tensor:
        (neat, neat_labels), (shuffled, shuffled_labels) = split_streams(
            embeddings, labels, self.group_sizes, self.name
        )
        if self.use_shuffled_loss and len(shuffled) == 0:
            raise InputError("damlrrm: the shuffled loss needs a two-stream batch (sampler two_stream)")
        graph = self.graph_loss(neat, neat_labels) if self.use_graph_loss else zero_loss(embeddings)
        if self.use_shuffled_loss:
            shuffled_term = self.shuffled_loss(neat, neat_labels, shuffled, shuffled_labels)
        else:
            shuffled_term = zero_loss(embeddings)
        self.record_terms(graph=graph, shuffled=shuffled_term)
        return graph + shuffled_term
