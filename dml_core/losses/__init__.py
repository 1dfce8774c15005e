"""Deep-metric-learning losses, one module per family, on one base.

Every loss is a ``MetricLoss`` (``base``): a ``name``, the batch check, and ``last_terms`` (the terms of the last
forward, detached, for losses made of several). ``forward(embeddings (N, D), labels (N,))`` returns a scalar,
except ``drml`` (``DRMLLoss``), which applies a base loss to the relational head's ``RelationalOutput``. The
composite losses (``CompositeLoss``: ``cgml``, ``drml``) receive their base losses built. Find a loss by name in
``LOSSES`` or build it from a recipe's name and parameters with ``build_loss(name, **params)`` (``registry``).

Learnable state (proxies of ``proxy_nca`` / ``proxy_anchor``, a learned ``beta`` of ``margin``) is
registered on the loss module, so ``loss.parameters()`` yields exactly it (and nothing for the other
losses). Give it its own learning rate with a parameter group::

    optimizer = torch.optim.Adam(
        [{"params": model.parameters()}, {"params": loss.parameters(), "lr": 100 * base_lr}], lr=base_lr
    )

Shared pieces: ``base`` (the base classes, pairwise matrix, masks, reductions), ``mining`` (triplet / MS /
distance-weighted miners as pure functions returning index tensors), ``spanning_tree`` (batched Prim forests,
damlrrm). Paper methods: ``damlrrm`` (graph + shuffled losses), ``anml`` (DANML, improved Proxy-NCA), ``gpw``
(pair / triplet weighting), ``cgml`` (graph-consistency wrapper around a base loss), ``drml`` (the relational
objective around a base loss).
"""

from dml_core.losses.anml import DANMLLoss, ImprovedProxyNCALoss
from dml_core.losses.base import CompositeLoss, MetricLoss
from dml_core.losses.binomial import BinomialDevianceLoss
from dml_core.losses.cgml import GraphConsistencyLoss
from dml_core.losses.contrastive import ContrastiveLoss
from dml_core.losses.damlrrm import DAMLRRMLoss
from dml_core.losses.drml import DRMLLoss
from dml_core.losses.gpw import GeneralPairWeightingLoss, GeneralTripletWeightingLoss
from dml_core.losses.lifted import GeneralizedLiftedLoss, LiftedStructureLoss
from dml_core.losses.margin import MarginLoss
from dml_core.losses.multi_similarity import MultiSimilarityLoss
from dml_core.losses.npair import NPairLoss
from dml_core.losses.proxy_anchor import ProxyAnchorLoss
from dml_core.losses.proxy_nca import ProxyNCALoss
from dml_core.losses.ranked_list import RankedListLoss
from dml_core.losses.registry import LOSSES, build_loss, loss_parameters, with_run_values
from dml_core.losses.triplet import TripletLoss

__all__ = [
    "LOSSES",
    "BinomialDevianceLoss",
    "CompositeLoss",
    "ContrastiveLoss",
    "DAMLRRMLoss",
    "DANMLLoss",
    "DRMLLoss",
    "GeneralPairWeightingLoss",
    "GeneralTripletWeightingLoss",
    "GeneralizedLiftedLoss",
    "GraphConsistencyLoss",
    "ImprovedProxyNCALoss",
    "LiftedStructureLoss",
    "MarginLoss",
    "MetricLoss",
    "MultiSimilarityLoss",
    "NPairLoss",
    "ProxyAnchorLoss",
    "ProxyNCALoss",
    "RankedListLoss",
    "TripletLoss",
    "build_loss",
    "loss_parameters",
    "with_run_values",
]
