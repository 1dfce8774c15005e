"""DRML's objective (Zheng et al., "Deep Relational Metric Learning", ICCV 2021, Sec. 3, Eq. 2-4 and 10).

The loss works on the output of ``dml_core.models.relational_head.RelationalHead`` (a ``RelationalOutput``), which
already routes gradients as the paper asks (decoders see detached inputs; the relational module reads detached trunk
and individual features). This module adds the objective itself: branch routing, the per-branch discriminative loss,
the reconstruction loss and the embedding loss, weighted by lambda1 and lambda2.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any, Literal, Protocol, runtime_checkable

import torch
import torch.nn.functional as F
from torch import Tensor, nn

from dml_core.errors import InputError
from dml_core.losses.base import BaseLossBuilder, CompositeLoss, check_batch, zero_loss


@runtime_checkable
class RelationalBatch(Protocol):
    """What DRML needs from a forward pass (``RelationalOutput`` provides it; typed here structurally so the
    losses package does not import the models package and its backbones)."""

    embedding: Tensor  # z, (N, K*dim)
    individual: Tensor  # g_k(y), (N, K, dim)
    reconstruction_error: Tensor  # ||p_k(g_k(y)) - y||_2, (N, K)


def overridden(
    base_params: Mapping[str, Any] | None, overrides: Mapping[str, Any] | None, field: str
) -> Mapping[str, Any] | None:
    """``base_params`` with ``overrides`` laid over it (the parameters of one kind of DRML's base losses).

    >>> overridden({"alpha": 32.0}, {"proxy_init": "kaiming_uniform_a_sqrt5"}, "embedding_base_params")
    {'alpha': 32.0, 'proxy_init': 'kaiming_uniform_a_sqrt5'}
    """
    if overrides is None:
        return base_params
    if not isinstance(overrides, Mapping):
        raise InputError(f"loss 'drml': {field} must be a mapping of the base loss's parameters; got {overrides!r}")
    if base_params is not None and not isinstance(base_params, Mapping):
        return base_params  # the builder names what is wrong with it
    return {**(base_params or {}), **overrides}


def drml_widths(num_features: int, feature_dim: int | None, embedding_dim: int | None) -> tuple[int | None, int | None]:
    """(feature_dim, embedding_dim): the width of J_m's inputs g_k and of J_emb's z = [g_1 ... g_K], each derived
    from the other when unset (z is K times as wide as a g_k).

    >>> drml_widths(4, None, 512), drml_widths(4, 128, None)
    ((128, 512), (128, 512))
    """
    if num_features < 1:
        raise InputError(f"loss 'drml': num_features must be a positive integer; got {num_features}")
    if feature_dim is None and embedding_dim is not None:
        if embedding_dim % num_features:
            raise InputError(
                f"loss 'drml': embedding_dim {embedding_dim} is not num_features ({num_features}) x feature_dim; "
                "set feature_dim to the head's dim"
            )
        feature_dim = embedding_dim // num_features
    if embedding_dim is None and feature_dim is not None:
        embedding_dim = num_features * feature_dim
    return feature_dim, embedding_dim


class DRMLLoss(CompositeLoss):
    """J = w_ensem * J_ensem + lambda1 * J_recon + lambda2 * J_emb (Eq. 10), lambda1 = 0.1, lambda2 = 10 (Sec. 4.2).

    - Routing (Eq. 3): k*(x) = argmin_k ||p_k(g_k(y)) - y||_2 (``reconstruction_error``'s argmin; no gradient).
    - J_ensem = sum_k J_ind^k (Sec. 3.3), J_ind^k = J_m on the individual feature g_k of the samples routed to
      branch k only (Eq. 4). J_m is the base loss ``base`` with its own reduction over that subset (the paper
      writes a sum over tuples; every J_m here averages). A branch that receives no sample, or no usable tuple,
      contributes 0 (``empty_branch`` says whether its J_m's parameters still take a step). Its gradient reaches
      g_k and the trunk.
    - J_recon = mean over the batch of (1/K) sum_k of the head's reconstruction error: ||p_k(g_k(y)) - y||_2
      (Eq. 2, the L2 norm, not squared) by default; the released code's mean squared error on chunks of y is the
      head's ``reconstruction_measure="mse"`` with ``node_input="chunks"``. The head makes it train the decoders
      only.
    - J_emb = J_m on the relation-aware embedding z (Eq. 9) of every sample; the head keeps it off the trunk and
      the individual FCs (Sec. 3.3).

    The paper uses "the same discriminative loss" for J_m and J_emb (Sec. 3.3): the loss receives its built
    instances, ``branch_losses`` (J_m: one per branch, or one shared by all) and ``embedding_loss`` (J_emb). A recipe
    names it with ``base`` and ``base_params`` (e.g. ``"proxy_anchor"``, ``"triplet"`` with ``mining: semihard``,
    ``"margin"`` with distance-weighted sampling); ``from_recipe`` builds K + 1 instances, or 2 with
    ``shared_branch_loss``.

    Choices where the paper is silent (papers/drml/method.md, section 3), all parameters:
    - ``shared_branch_loss`` (of ``from_recipe``): False gives every branch its own J_m instance (own proxies of
      ``feature_dim``); True shares one across branches. J_emb always has its own, of ``embedding_dim``
      (= K * feature_dim).
    - ``normalize_individual``: L2-normalise g_k before J_m (True: the margin loss and distance-weighted sampling
      assume unit vectors; the released code normalises its nodes, the head's ``normalize_nodes``). z is
      normalised by the head (``normalize``).
    - ``weight_ensem``: 1 in the paper; 0 gives Table 3's "w/o J_ensem" (lambda1 = 0 / lambda2 = 0 the others).
    - ``branch_weighting``: "mean" (the released code's) adds the branches' losses, each computed on its own
      samples alone with its base loss's own reduction (ProxyAnchor's: means over proxies), so a branch with few
      samples gives each a larger gradient; "share" weights branch k's loss by its
      share of the batch, n_k / N, so every sample weighs the same whichever branch takes it, as Eq. 4's sum over
      samples does (papers/drml/method.md, section 5: at the mini tier the split batches' gradient spikes stall
      the trunk under "mean").
    - ``empty_branch``: "no_term" leaves a branch that receives no sample out of the loss, as Eq. 4's empty sum:
      its J_m's parameters (ProxyAnchor's proxies) get no gradient, and torch's optimisers skip a parameter
      without one (no decay, no momentum). "zero_gradient" gives them an exact zero gradient, as the released code
      does (its branch loss runs on the empty batch and stays connected to the proxies), so the optimiser's weight
      decay and momentum still move them. g_k gets a zero gradient under both (the zero term reads it).
    - ``branch_base_params`` and ``embedding_base_params`` (of ``from_recipe``): parameters of the branches' J_m
      and of J_emb that override ``base_params`` (the released code starts the two kinds of proxies by different
      rules: ``proxy_init``).
    - ``num_features`` (K) and ``feature_dim`` must match the head's ``num_features`` and ``dim`` (``feature_dim``
      None: not checked); ``from_recipe`` derives ``feature_dim`` from ``embedding_dim`` (``drml_widths``).
    ``num_classes`` and ``embedding_dim`` are filled in by the trainer. ``last_terms``: "ensem", "recon", "emb"
    and "branch_<k>", the fraction of the batch routed to branch k (Fig. 5).
    """

    name = "drml"

    def __init__(
        self,
        branch_losses: Sequence[nn.Module],
        embedding_loss: nn.Module,
        num_features: int,
        feature_dim: int | None = None,
        lambda_recon: float = 0.1,
        lambda_emb: float = 10.0,
        weight_ensem: float = 1.0,
        normalize_individual: bool = True,
        branch_weighting: Literal["mean", "share"] = "mean",
        empty_branch: Literal["no_term", "zero_gradient"] = "no_term",
    ) -> None:
        super().__init__()
        if num_features < 1 or len(branch_losses) not in (1, num_features):
            raise InputError(
                f"loss 'drml': expected one branch loss per feature (num_features {num_features}) or one shared; "
                f"got {len(branch_losses)}"
            )
        self.num_features, self.feature_dim = num_features, feature_dim
        self.lambda_recon, self.lambda_emb, self.weight_ensem = lambda_recon, lambda_emb, weight_ensem
        self.normalize_individual = normalize_individual
        if branch_weighting not in ("mean", "share"):
            raise InputError(f"loss 'drml': branch_weighting: expected 'mean' or 'share'; got {branch_weighting!r}")
        self.branch_weighting = branch_weighting
        if empty_branch not in ("no_term", "zero_gradient"):
            raise InputError(f"loss 'drml': empty_branch: expected 'no_term' or 'zero_gradient'; got {empty_branch!r}")
        self.empty_branch = empty_branch
        self.branch_losses = nn.ModuleList(branch_losses)
        self.embedding_loss = embedding_loss

    @classmethod
    def from_recipe(
        cls,
        build_base: BaseLossBuilder,
        base: str,
        base_params: Mapping[str, Any] | None = None,
        num_classes: int | None = None,
        embedding_dim: int | None = None,
        num_features: int = 4,
        feature_dim: int | None = None,
        shared_branch_loss: bool = False,
        branch_base_params: Mapping[str, Any] | None = None,
        embedding_base_params: Mapping[str, Any] | None = None,
        **objective: Any,
    ) -> DRMLLoss:
        """DRML as a recipe writes it: the base loss by name (``base``, ``base_params``), built K times (once with
        ``shared_branch_loss``) at ``feature_dim`` for the branches and once at ``embedding_dim`` for J_emb, each
        kind with its overrides of ``base_params`` (``branch_base_params``, ``embedding_base_params``)."""
        feature_dim, embedding_dim = drml_widths(num_features, feature_dim, embedding_dim)
        count = 1 if shared_branch_loss else num_features
        branch_params = overridden(base_params, branch_base_params, "branch_base_params")
        embedding_params = overridden(base_params, embedding_base_params, "embedding_base_params")
        branch_losses = [build_base(base, branch_params, num_classes, feature_dim) for _ in range(count)]
        embedding_loss = build_base(base, embedding_params, num_classes, embedding_dim)
        return cls(branch_losses, embedding_loss, num_features, feature_dim, **objective)

    def branch_loss(self, k: int) -> nn.Module:
        """The J_m instance of branch ``k``."""
        return self.branch_losses[k % len(self.branch_losses)]

    def empty_branch_term(self, k: int, individual: Tensor) -> Tensor:
        """J_ind^k of a branch that receives no sample: 0, connected to g_k and, under ``empty_branch:
        zero_gradient``, to the branch's J_m parameters."""
        term = zero_loss(individual)
        if self.empty_branch == "zero_gradient":
            for parameter in self.branch_loss(k).parameters():
                term = term + zero_loss(parameter)
        return term

    def check_inputs(self, output: RelationalBatch, labels: Tensor) -> None:
        if not isinstance(output, RelationalBatch):
            raise InputError(
                "loss 'drml': expected the relational head's output (embedding, individual, reconstruction_error); "
                f"got {type(output).__name__}: set model.head.name to 'relational'"
            )
        check_batch(output.embedding, labels, self.name)
        individual = output.individual
        expected = (self.num_features, self.feature_dim or individual.shape[-1])
        if individual.dim() != 3 or tuple(individual.shape[1:]) != expected:
            raise InputError(
                f"loss 'drml': individual features must be (N, num_features, feature_dim) = (N, {expected[0]}, "
                f"{expected[1]}); got {tuple(individual.shape)}: match the loss's num_features / feature_dim to the "
                "head's num_features / dim"
            )
        if tuple(output.reconstruction_error.shape) != tuple(individual.shape[:2]):
            raise InputError(
                f"loss 'drml': reconstruction_error must be (N, num_features) = {tuple(individual.shape[:2])}; got "
                f"{tuple(output.reconstruction_error.shape)}"
            )

    def compute_loss(self, output: RelationalBatch, labels: Tensor) -> Tensor:
        individual = output.individual
        if self.normalize_individual:
            individual = F.normalize(individual, dim=2)
        routing = output.reconstruction_error.detach().argmin(dim=1)  # k*(x), Eq. 3
        branch_terms = []
        for k in range(self.num_features):
            # One host sync per branch on CUDA, for the routed rows: J_ind^k is the base loss on the branch's samples
            # only (Eq. 4), whose means and statistics run over that subset, so the subset's size must be known. The
            # empty-branch test then reads a shape already on the host (base losses need not accept an empty batch).
            rows = torch.nonzero(routing == k).squeeze(1)
            if len(rows) == 0:
                branch_terms.append(self.empty_branch_term(k, individual))
                continue
            term = self.branch_loss(k)(individual[rows, k], labels[rows])
            branch_terms.append(term * (len(rows) / len(labels)) if self.branch_weighting == "share" else term)
        ensem = torch.stack(branch_terms).sum()
        recon = output.reconstruction_error.mean()
        emb = self.embedding_loss(output.embedding, labels)
        shares = F.one_hot(routing, self.num_features).to(recon.dtype).mean(dim=0)
        branch_shares = {f"branch_{k}": share for k, share in enumerate(shares)}
        self.record_terms(ensem=ensem, recon=recon, emb=emb, **branch_shares)
        return self.weight_ensem * ensem + self.lambda_recon * recon + self.lambda_emb * emb
