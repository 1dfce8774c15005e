"""The names the whole suite shares, each listed once: paper keys, the papers' image data sets, the backbones.

Schemas take the ``Literal`` types, code that loops or offers choices takes the tuples. Standard library only:
``noxfile.py`` reads this file by path before the environment (and so the package's dependencies) exists.

>>> PAPER_KEYS
('damlrrm', 'anml', 'gpw', 'drml', 'cgml')
>>> RECIPE_KEYS
('damlrrm', 'anml', 'gpw', 'drml', 'cgml', 'fair')
>>> FAIR_KEY in STUDY_KEYS
True
>>> suite_backbone("bn-inception")
'bn_inception'
"""

from __future__ import annotations

from typing import Literal, get_args

PaperKey = Literal["damlrrm", "anml", "gpw", "drml", "cgml"]
PAPER_KEYS: tuple[str, ...] = get_args(PaperKey)

# Studies: recipe folders (reproduce/<key>/) beside the papers' that compare the papers' methods under one protocol
# of their own (papers/fair/method.md). A study has no published tables: it is run and tabled like a paper, but it
# is not one of the papers whose tables the suite reproduces.
StudyKey = Literal["fair"]
STUDY_KEYS: tuple[str, ...] = get_args(StudyKey)
# Every recipe folder: what `dml reproduce`, `dml recipes` and the reproduce-<key> nox sessions take.
RECIPE_KEYS: tuple[str, ...] = PAPER_KEYS + STUDY_KEYS

# The deep papers' benchmarks as the suite names them (data registry, recipes, published tables, Recall@K lists).
ImageDataset = Literal["cub200", "cars196", "sop", "inshop"]
IMAGE_DATASETS: tuple[str, ...] = get_args(ImageDataset)

# The backbones as the suite names them (backbone registry, weight files, recipes).
Backbone = Literal["bn_inception", "googlenet", "resnet50"]
BACKBONES: tuple[str, ...] = get_args(Backbone)

# How papers/<key>/published.yaml spells a backbone: transcribed data, kept as written there.
PublishedBackbone = Literal["googlenet", "bn-inception", "resnet50"]
PUBLISHED_BACKBONES: tuple[str, ...] = get_args(PublishedBackbone)


def suite_backbone(published: str) -> str:
    """The suite's name of a backbone as published.yaml spells it (the one mapping between the two spellings).

    >>> [suite_backbone(name) for name in PUBLISHED_BACKBONES]
    ['googlenet', 'bn_inception', 'resnet50']
    """
    if published not in PUBLISHED_BACKBONES:
        raise ValueError(f"expected a published backbone ({', '.join(PUBLISHED_BACKBONES)}), found {published!r}")
    return published.replace("-", "_")


# The fair comparison: one protocol for the papers' methods and the classic baselines. Its runs are
# ``<method>-<dataset>`` of ``reproduce/fair/``, its methods declared in ``reproduce/fair/study.yaml`` (a paper key
# here joins the study only when listed there); its key is one of STUDY_KEYS (typed as one: a key outside them is a
# type error), not a paper's (no published tables).
FAIR_KEY: StudyKey = "fair"
FairDataset = Literal["cub200", "cars196", "sop"]
FAIR_DATASETS: tuple[str, ...] = get_args(FairDataset)
