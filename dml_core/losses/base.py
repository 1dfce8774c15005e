"""What every loss shares: the ``MetricLoss`` base class, and the pieces losses are written with (the pairwise
matrix, label masks, masked reductions, proxies).

One convention runs through ``dml_core.losses``: "euclidean" and "squared_euclidean" give distances (smaller is
closer), "cosine" (on L2-normalised vectors) and "dot" similarities (larger is closer); ``margin_gap`` and
``as_dissimilarity`` let one formula serve both. Everything is vectorised on the device: no Python loops over pairs
or anchors, no host syncs.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping
from functools import partial
from typing import Any, ClassVar, Literal, Protocol

import torch
import torch.nn.functional as F
from torch import Tensor, nn

from dml_core.errors import InputError

Distance = Literal["euclidean", "squared_euclidean", "cosine", "dot"]
DISTANCES: tuple[str, ...] = ("euclidean", "squared_euclidean", "cosine", "dot")
SIMILARITIES = frozenset({"cosine", "dot"})


def check_choice(value: object, allowed: tuple[str, ...], owner: str, field: str) -> None:
    """Raise ``InputError`` naming the owner, the field, the accepted values and the value found.

    >>> check_choice("cosine", DISTANCES, "triplet", "distance")
    """
    if value not in allowed:
        raise InputError(f"{owner}: {field} must be one of {', '.join(allowed)}; got {value!r}")


def check_batch(embeddings: Tensor, labels: Tensor, owner: str) -> None:
    """Raise ``InputError`` unless embeddings are (N, D) floats and labels are (N,) integers."""
    if embeddings.dim() != 2 or not embeddings.is_floating_point():
        raise InputError(
            f"{owner}: embeddings must be a 2-D float tensor (N, D); got shape {tuple(embeddings.shape)} "
            f"dtype {embeddings.dtype}"
        )
    if labels.dim() != 1 or labels.shape[0] != embeddings.shape[0] or labels.is_floating_point():
        raise InputError(
            f"{owner}: labels must be a 1-D integer tensor of length {embeddings.shape[0]}; got shape "
            f"{tuple(labels.shape)} dtype {labels.dtype}"
        )


class MetricLoss(nn.Module):
    """The base of every loss: its registry ``name``, the batch check and the record of its terms.

    A loss sets ``name`` (the registry finds it by that, in its module: ``registry.declared_losses``) and implements
    ``compute_loss(embeddings, labels)``. ``forward`` checks the batch first (``check_inputs``: (N, D) float
    embeddings and (N,) integer labels, else an ``InputError`` that starts with the loss's name), then computes. A
    loss made of several terms records them with ``record_terms`` on every forward; ``last_terms`` holds them
    detached (the trainer logs them) and stays empty for the others.
    """

    name: ClassVar[str]
    aliases: ClassVar[tuple[str, ...]] = ()  # other names a recipe may give it

    def __init__(self) -> None:
        super().__init__()
        self.last_terms: dict[str, Tensor] = {}

    def forward(self, embeddings: Tensor, labels: Tensor) -> Tensor:
        self.check_inputs(embeddings, labels)
        return self.compute_loss(embeddings, labels)

    def check_inputs(self, embeddings: Tensor, labels: Tensor) -> None:
        check_batch(embeddings, labels, self.name)

    def compute_loss(self, embeddings: Tensor, labels: Tensor) -> Tensor:
        raise NotImplementedError(f"{type(self).__name__} does not implement compute_loss")

    def record_terms(self, **terms: Tensor) -> None:
        """Keep this forward's terms, detached, in ``last_terms``."""
        self.last_terms = {key: value.detach() for key, value in terms.items()}


class BaseLossBuilder(Protocol):
    """Builds the registered loss ``name`` with ``params``, the run's ``num_classes`` and an ``embedding_dim``
    filled in where that loss takes them and ``params`` leaves them unset (the registry's ``with_run_values``)."""

    def __call__(
        self, name: str, params: Mapping[str, Any] | None, num_classes: int | None, embedding_dim: int | None
    ) -> nn.Module: ...


class CompositeLoss(MetricLoss):
    """A loss around base losses it receives built (its constructor's required arguments).

    A recipe names the base loss (``base``) and gives its parameters (``base_params``); ``from_recipe`` takes
    those, builds the base loss(es) with ``build_base`` and constructs the composite. Its parameters, then the
    constructor's optional ones, are what a recipe may set (``registry.loss_parameters``).
    """

    @classmethod
    def from_recipe(cls, build_base: BaseLossBuilder, base: str, **params: Any) -> CompositeLoss:
        raise NotImplementedError(f"{cls.__name__} does not implement from_recipe")


def is_similarity(distance: str) -> bool:
    """Whether ``distance`` names a similarity (larger is closer)."""
    return distance in SIMILARITIES


def pairwise_matrix(x: Tensor, y: Tensor, distance: str) -> Tensor:
    """The (len(x), len(y)) matrix of distances or similarities between rows of ``x`` and ``y``.

    "euclidean" uses ``torch.cdist``, whose gradient is 0 (not NaN) at zero distance (the diagonal).

    >>> x = torch.tensor([[0.0, 0.0], [3.0, 4.0]])
    >>> pairwise_matrix(x, x, "euclidean")
    tensor([[0., 5.],
            [5., 0.]])
    >>> pairwise_matrix(x, x, "squared_euclidean")[0, 1].item()
    25.0
    """
    if distance == "euclidean":
        return torch.cdist(x, y)
    if distance == "squared_euclidean":
        return torch.cdist(x, y).pow(2)
    if distance == "cosine":
        return F.normalize(x, dim=1) @ F.normalize(y, dim=1).T
    if distance == "dot":
        return x @ y.T
    raise InputError(f"distance must be one of {', '.join(DISTANCES)}; got {distance!r}")


def as_dissimilarity(matrix: Tensor | float, distance: str) -> Tensor | float:
    """The matrix with "smaller is closer" semantics: a distance as is, a similarity negated (what miners take)."""
    return -matrix if is_similarity(distance) else matrix


def margin_gap(a: Tensor | float, b: Tensor | float, distance: str) -> Tensor | float:
    """``a - b`` for a distance, ``b - a`` for a similarity: how far ``a`` is "farther" than ``b``.

    So one formula such as ``relu(margin_gap(d_ap, d_an) + m)`` serves both kinds (the convention of
    pytorch-metric-learning's ``distance.margin``).

    >>> margin_gap(1.0, 0.25, "euclidean"), margin_gap(1.0, 0.25, "cosine")
    (0.75, -0.75)
    """
    return b - a if is_similarity(distance) else a - b


def label_masks(labels: Tensor) -> tuple[Tensor, Tensor]:
    """Boolean (N, N) masks of positive pairs (same label, diagonal excluded) and negative pairs.

    >>> pos, neg = label_masks(torch.tensor([0, 0, 1]))
    >>> pos.int().tolist(), neg.int().tolist()
    ([[0, 1, 0], [1, 0, 0], [0, 0, 0]], [[0, 0, 1], [0, 0, 1], [1, 1, 0]])
    """
    same = labels.unsqueeze(0) == labels.unsqueeze(1)
    eye = torch.eye(len(labels), dtype=torch.bool, device=labels.device)
    return same & ~eye, ~same


def indices_to_mask(rows: Tensor, cols: Tensor, shape: tuple[int, int]) -> Tensor:
    """A boolean matrix of ``shape`` that is True exactly at (rows[k], cols[k])."""
    mask = torch.zeros(shape, dtype=torch.bool, device=rows.device)
    mask[rows, cols] = True
    return mask


def masked_logsumexp(x: Tensor, mask: Tensor, dim: int = 1, add_one: bool = False) -> Tensor:
    """log(sum over ``mask`` of exp(x)) along ``dim``, plus exp(0) = 1 inside the log when ``add_one``.

    A slice with an empty mask gives 0 (with ``add_one``: log 1; without: "no term", not -inf), and its
    gradient is 0, so empty anchors drop out instead of producing inf or NaN.

    >>> x = torch.tensor([[0.0, 1.0], [2.0, 3.0]])
    >>> m = torch.tensor([[True, False], [False, False]])
    >>> masked_logsumexp(x, m, add_one=True)
    tensor([0.6931, 0.0000])
    """
    empty = ~mask.any(dim=dim, keepdim=True)
    # An all -inf slice would back-propagate NaN; give it a finite slice and zero its result.
    filled = x.masked_fill(~mask, float("-inf")).masked_fill(empty, 0.0)
    if add_one:
        zeros = torch.zeros_like(filled.narrow(dim, 0, 1))
        filled = torch.cat([filled, zeros], dim=dim)
    out = torch.logsumexp(filled, dim=dim)
    return out.masked_fill(empty.squeeze(dim), 0.0)


def anchored_logsumexp(x: Tensor, mask: Tensor, anchor: float | None = None) -> Tensor:
    """Per row: log(exp(anchor) + sum over ``mask`` of exp(x)); ``masked_logsumexp`` when ``anchor`` is None.

    The fixed term is anml's radius anchor (lambda in Eqs. 22, 25), given here already as a logit. With an
    anchor no row is empty, so every row is defined.

    >>> x = torch.tensor([[0.0, 1.0]])
    >>> anchored_logsumexp(x, torch.tensor([[True, False]]), anchor=0.0)
    tensor([0.6931])
    """
    if anchor is None:
        return masked_logsumexp(x, mask)
    column = torch.full_like(x[:, :1], anchor)
    return masked_logsumexp(torch.cat([x, column], dim=1), torch.cat([mask, torch.ones_like(mask[:, :1])], dim=1))


def masked_softmax(x: Tensor, mask: Tensor, dim: int = 1) -> Tensor:
    """Softmax of ``x`` over the entries in ``mask`` along ``dim``; zero outside it and on empty slices.

    ``sum(masked_softmax(T * x, mask) * v)`` is the exp(T x)-weighted mean of ``v`` over the mask,
    computed without overflow.
    """
    filled = x.masked_fill(~mask, float("-inf"))
    # An all -inf slice would give NaN; give it a finite row and zero it afterwards.
    safe = filled.masked_fill(~mask.any(dim=dim, keepdim=True), 0.0)
    return torch.softmax(safe, dim=dim) * mask


def masked_mean(values: Tensor, mask: Tensor, dim: int | None = None) -> Tensor:
    """Mean of ``values`` over ``mask`` (over all entries, or along ``dim``); 0 where the mask is empty.

    >>> masked_mean(torch.tensor([1.0, 2.0, 6.0]), torch.tensor([True, False, True]))
    tensor(3.5000)
    """
    total = torch.where(mask, values, torch.zeros_like(values))
    if dim is None:
        return total.sum() / mask.sum().clamp(min=1)
    return total.sum(dim=dim) / mask.sum(dim=dim).clamp(min=1)


REDUCTIONS = ("mean", "sum")  # a loss's own average over its terms, or their plain sum (cgml's Eqs. 5-7)


def masked_total(values: Tensor, mask: Tensor, reduction: str) -> Tensor:
    """``masked_mean`` (reduction "mean") or the plain sum over ``mask`` ("sum").

    >>> masked_total(torch.tensor([1.0, 2.0, 6.0]), torch.tensor([True, False, True]), "sum")
    tensor(7.)
    """
    if reduction == "mean":
        return masked_mean(values, mask)
    return torch.where(mask, values, torch.zeros_like(values)).sum()


def mean_nonzero(losses: Tensor) -> Tensor:
    """Average over the strictly positive terms; 0 (with a graph) when there are none.

    This is the "average over non-zero terms" reduction (pytorch-metric-learning's ``AvgNonZeroReducer``)
    that triplet and contrastive losses use so that easy, already-satisfied terms do not dilute the loss.

    >>> mean_nonzero(torch.tensor([0.0, 2.0, 4.0]))
    tensor(3.)
    """
    return losses.sum() / (losses > 0).sum().clamp(min=1)


def zero_loss(embeddings: Tensor) -> Tensor:
    """A scalar 0 connected to the graph, for batches that give a loss no terms at all."""
    return embeddings.sum() * 0.0


# How a proxy set may start: a torch initialiser applied to the (num_classes, embedding_dim) tensor. For that shape
# torch's fan-in is embedding_dim and its fan-out num_classes, so the rules differ in scale, not only in direction.
PROXY_INITS: dict[str, Callable[[Tensor], Tensor]] = {
    # std sqrt(2 / num_classes): the ProxyAnchor authors' code and pytorch-metric-learning's ProxyAnchorLoss
    "kaiming_normal_fan_out": partial(torch.nn.init.kaiming_normal_, mode="fan_out"),
    # std 1 / sqrt(3 embedding_dim) (leaky-ReLU gain with a = sqrt(5), fan-in): DRML's released branch proxies
    "kaiming_normal_a_sqrt5": partial(torch.nn.init.kaiming_normal_, a=math.sqrt(5)),
    # uniform on +-1 / sqrt(embedding_dim), the same std (nn.Linear's weight rule): DRML's released z proxies
    "kaiming_uniform_a_sqrt5": partial(torch.nn.init.kaiming_uniform_, a=math.sqrt(5)),
}
ProxyInit = Literal["kaiming_normal_fan_out", "kaiming_normal_a_sqrt5", "kaiming_uniform_a_sqrt5"]


def make_proxies(
    num_classes: int, embedding_dim: int, owner: str, init: ProxyInit = "kaiming_normal_fan_out"
) -> torch.nn.Parameter:
    """One learnable proxy per class, (num_classes, embedding_dim), started by the rule ``init`` (``PROXY_INITS``).

    Every rule draws from the global torch RNG (seed it for determinism). The losses compare normalised proxies,
    yet the rule's scale matters: an Adam step has about the same size whatever a proxy's norm, so the angle it
    turns per step goes as 1 / norm.

    >>> _ = torch.manual_seed(0)
    >>> round(make_proxies(100, 128, "doc", "kaiming_normal_a_sqrt5").norm(dim=1).mean().item(), 1)
    0.6
    """
    if num_classes < 1 or embedding_dim < 1:
        raise InputError(
            f"{owner}: num_classes and embedding_dim must be positive integers; got "
            f"num_classes={num_classes}, embedding_dim={embedding_dim}"
        )
    check_choice(init, tuple(PROXY_INITS), owner, "proxy_init")
    proxies = torch.empty(num_classes, embedding_dim)
    PROXY_INITS[init](proxies)
    return torch.nn.Parameter(proxies)
