"""The shared names agree with what carries them: folders, registries, Recall@K lists, published tables."""

from typing import get_args

import pytest

from dml_core.data.registry import DATASETS
from dml_core.evaluation.protocols import RECALL_KS
from dml_core.models.backbones import BACKBONES as BACKBONE_CLASSES
from dml_core.output_paths import RECIPES_DIR
from dml_core.published import PAPERS_DIR, load_all
from dml_core.vocabulary import (
    BACKBONES,
    IMAGE_DATASETS,
    PAPER_KEYS,
    PUBLISHED_BACKBONES,
    Backbone,
    PaperKey,
    suite_backbone,
)


def test_every_paper_key_has_its_published_tables_and_recipes():
    assert get_args(PaperKey) == PAPER_KEYS
    for key in PAPER_KEYS:
        assert (PAPERS_DIR / key / "published.yaml").is_file(), key
        assert (RECIPES_DIR / key).is_dir(), key


def test_every_image_dataset_has_a_data_spec_and_a_recall_list():
    assert set(IMAGE_DATASETS) <= set(DATASETS)
    assert set(RECALL_KS) == set(IMAGE_DATASETS)


def test_the_backbones_are_the_registry_s_and_every_published_spelling_maps_to_one():
    assert get_args(Backbone) == BACKBONES
    assert set(BACKBONES) == set(BACKBONE_CLASSES)
    assert {suite_backbone(name) for name in PUBLISHED_BACKBONES} == set(BACKBONES)
    rows = [row for paper in load_all().values() for table in paper.tables for row in table.rows]
    assert {row.suite_backbone for row in rows if row.backbone} <= set(BACKBONES)


def test_an_unknown_published_backbone_is_refused():
    with pytest.raises(ValueError, match=r"expected a published backbone .*found 'bn_inception'"):
        suite_backbone("bn_inception")
