"""Deep-metric-learning losses, one module per family, on one base.

Every loss is a ``MetricLoss`` (``base``); find one by name in ``LOSSES`` or build it from a recipe's name and
parameters with ``build_loss(name, **params)`` (``registry``). A loss's learnable state (proxies, a learned margin
``beta``) is registered on it, so ``loss.parameters()`` yields exactly that and can get its own learning rate
(docs/training.md, "Losses").

It imports only the top-level helpers; training, the runner's component check and the GPU check import it.
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
