"""Recipe -> the objects a run needs: data, model, loss, sampler. Plain calls into the registries."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

import numpy as np
import torch
from torch import nn

from dml_core.data import SAMPLERS, ImageDataset, load_split
from dml_core.data.index import SplitIndex
from dml_core.data.prepare import ensure_generated
from dml_core.data.registry import DatasetSpec
from dml_core.data.transforms import ToModelInput, build_pixel_transform
from dml_core.data.validation_split import split_off_validation
from dml_core.errors import InputError
from dml_core.evaluation.protocols import run_recall_ks
from dml_core.losses import build_loss, with_run_values
from dml_core.models import (
    HEADS,
    EmbeddingModel,
    build_backbone,
    glyph_pretraining,
)
from dml_core.recipes.settings import Recipe

QUERY_GALLERY_SPLITS = ("query", "gallery")


@dataclass
class TestSet:
    """The evaluation images: one split (CUB, Cars, SOP) or query + gallery (In-Shop) with masks; the dataset's uint8
    images become the model's input through ``to_model_input`` on the device (None: they are that already)."""

    dataset: ImageDataset
    labels: np.ndarray
    query_mask: np.ndarray | None
    gallery_mask: np.ndarray | None
    to_model_input: ToModelInput | None = None


def _concat(a: SplitIndex, b: SplitIndex) -> SplitIndex:
    if a.root != b.root:
        raise ValueError("query and gallery splits come from different folders")
    return SplitIndex(
        a.dataset, "query+gallery", a.root, a.relative_paths + b.relative_paths, np.concatenate([a.labels, b.labels])
    )


def load_test_split(dataset: DatasetSpec, root: Path) -> tuple[SplitIndex, np.ndarray | None, np.ndarray | None]:
    if "test" in dataset.splits:
        return load_split(dataset, root, "test"), None, None
    query, gallery = (load_split(dataset, root, split) for split in QUERY_GALLERY_SPLITS)
    mask = np.zeros(len(query) + len(gallery), dtype=bool)
    mask[: len(query)] = True
    return _concat(query, gallery), mask, ~mask


def build_model(recipe: Recipe, data_root: Path | None = None) -> EmbeddingModel:
    """The recipe's network; ``data_root`` holds the cached glyph-pretrained weights (``model.weights``
    "glyph-pretrained", the mini tier's ``mini.start``), pretrained there first when missing."""
    settings = recipe.model
    if settings.weights == glyph_pretraining.GLYPH_PRETRAINED:
        if data_root is None:
            raise InputError("model.weights 'glyph-pretrained': expected a data root for its cached file, found none")
        backbone = glyph_pretraining.glyph_pretrained_backbone(
            settings.backbone, settings.width, data_root, glyph_pretraining.MINI_START
        )
    else:
        backbone = build_backbone(settings.backbone, weights=settings.weights, width=settings.width)
    kind = HEADS.lookup(settings.head.name)
    head = kind.build(backbone, settings.embedding_dim, settings.normalize, dict(settings.head.params))
    return EmbeddingModel(backbone, settings.pooling, head, frozen_bn=settings.frozen_bn)


def embedding_dim_of(model: EmbeddingModel, recipe: Recipe) -> int:
    """The embedding's width, measured (heads such as the fusion or relational one multiply it)."""
    was_training = model.training
    model.eval()
    with torch.no_grad():
        size = max(64, recipe.data.transforms.crop_size or 64)
        width = model.embed(torch.zeros(2, 3, size, size)).shape[1]
    model.train(was_training)
    return int(width)


def build_loss_for(
    recipe: Recipe,
    num_classes: int,
    embedding_dim: int,
    group_sizes: tuple[int, ...],
    images_per_class: int | None = None,
) -> nn.Module:
    """The recipe's loss; ``num_classes``, ``embedding_dim``, ``group_sizes`` and ``images_per_class`` (the
    sampler's) are filled in when the loss takes them and the recipe does not set them (``with_run_values``, the
    rule its base losses follow too)."""
    name = recipe.loss.name
    params = with_run_values(name, recipe.loss.params, num_classes, embedding_dim, group_sizes, images_per_class)
    return build_loss(name, **params)


def build_sampler(recipe: Recipe, labels: np.ndarray):
    name = recipe.sampler.name
    sampler = SAMPLERS.lookup(name)
    try:
        return sampler(labels, seed=recipe.training.seed, **recipe.sampler.params)
    except TypeError as error:
        raise InputError(f"sampler {name!r}: bad parameters {recipe.sampler.params}: {error}") from None


def build_datasets(
    recipe: Recipe, dataset: DatasetSpec, model: EmbeddingModel, root: Path
) -> tuple[ImageDataset, np.ndarray, TestSet, TestSet | None]:
    """Train dataset (items carry the dataset's own labels) with dense 0..C-1 labels, the test set, and the
    validation set (``data.validation``: the held-out training classes, transformed as the test set; None
    without one). With a validation split the train dataset holds only the classes not held out."""
    config = recipe.data.transforms
    ensure_generated(dataset, root)
    train_split, validation_split = split_off_validation(load_split(dataset, root, "train"), recipe.data.validation)
    # uint8 images: the batch is converted where it trains (``transforms.ToModelInput``, batches and evaluation)
    train = ImageDataset(train_split, build_pixel_transform(model.input_spec, config, train=True))
    test_split, query_mask, gallery_mask = load_test_split(dataset, root)
    evaluation_transform = build_pixel_transform(model.input_spec, config, train=False)
    to_model_input = ToModelInput(model.input_spec)
    test = TestSet(
        ImageDataset(test_split, evaluation_transform), test_split.labels, query_mask, gallery_mask, to_model_input
    )
    validation = None
    if validation_split is not None:
        images = ImageDataset(validation_split, evaluation_transform)
        validation = TestSet(images, validation_split.labels, None, None, to_model_input)  # every image a query
    return train, train_split.dense_labels(), test, validation


def recall_ks(recipe: Recipe) -> list[int]:
    return run_recall_ks(recipe.data.dataset, recipe.evaluation.recall_ks)
