"""Backbone registry: ``BACKBONES`` maps a name to its class; ``build_backbone`` adds the weights."""

from __future__ import annotations

import os

import torch

from dml_core.errors import InputError
from dml_core.models.backbones.base import WIDTHS, Backbone
from dml_core.models.backbones.bn_inception import BNInception
from dml_core.models.backbones.googlenet import GoogLeNet
from dml_core.models.backbones.resnet50 import ResNet50
from dml_core.models.weights import WEIGHT_FILES, resolve_weight_file, weights_identity
from dml_core.registry import Registry

BACKBONES: Registry[type[Backbone]] = Registry(
    "backbone", "model.backbone", {"bn_inception": BNInception, "googlenet": GoogLeNet, "resnet50": ResNet50}
)

PRETRAINED = "pretrained"
RANDOM = "random"


def build_backbone(name: str, weights: str | os.PathLike = PRETRAINED, width: float = 1.0) -> Backbone:
    """Build backbone ``name`` with ``weights``: ``"pretrained"`` (the known ImageNet file, found by the
    lookup in ``dml_core.models.weights``), a path to that file, or ``"random"`` (explicit random init).
    ``width`` < 1 narrows every layer (``WIDTHS``; random weights only: no published file fits). ResNet-50 is
    not narrowed: timm's constructor fixes its stem at 64 channels, and no mini comparison uses it.

    The result's ``weights_id`` records which: the file name and its sha256, or ``"random init"``.
    """
    widths = BACKBONES.lookup(name).widths
    if width not in widths:
        raise InputError(f"model.width: {name} is built with widths {', '.join(map(str, widths))}, found {width!r}")
    if width != 1.0 and weights != RANDOM:
        raise InputError(
            f"model.width {width}: a narrowed {name} has no published weights; expected model.weights 'random', "
            f"found {weights!r}"
        )
    backbone = BACKBONES[name](width=width) if width != 1.0 else BACKBONES[name]()
    if weights == RANDOM:
        return backbone
    weight_file = WEIGHT_FILES[name]
    path, sha256 = resolve_weight_file(weight_file, None if weights == PRETRAINED else weights)
    state = torch.load(path, map_location="cpu", weights_only=True)
    try:
        backbone.load_published_weights(state, weights_identity(weight_file, sha256))
    except RuntimeError as error:  # load_state_dict's key/shape report: a file for another architecture
        raise InputError(f"{path}: not a {name} state dict: {error}") from error
    return backbone


__all__ = ["BACKBONES", "PRETRAINED", "RANDOM", "WIDTHS", "Backbone", "build_backbone"]
