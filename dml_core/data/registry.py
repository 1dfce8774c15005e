"""Every dataset the suite knows: its class-disjoint DML split with exact counts, its published files (from the
catalog of sources, ``sources.yaml``) and how its annotation files become an index. ``DATASETS`` maps the name
used everywhere to its spec.

Counts follow the split conventions of Oh Song et al. 2016 and Liu et al. 2016.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

from dml_core.data.catalog import packaged_catalog
from dml_core.data.index import IndexRow
from dml_core.data.sources import cars, cub, embedded, inshop, sop
from dml_core.registry import Registry


@dataclass(frozen=True)
class SplitCounts:
    """Expected size of one split; ``classes=None``: the class count of this split alone is not checked."""

    images: int
    classes: int | None


@dataclass(frozen=True)
class KnownFile:
    """A published file: its name, md5 and, for an archive, the folder its content unpacks to (which identifies a
    renamed copy). Where it downloads from is the catalog's business (``catalog.dataset_sources``)."""

    filename: str
    md5: str
    top_folder: str | None = None
    # False for a checksum no public source gives: a copy that differs is reported, not refused (the content
    # checks carry its identity).
    gates: bool = True


def published_files(dataset: str) -> tuple[KnownFile, ...]:
    """The published files the packaged catalog lists for ``dataset`` (those with an md5)."""
    entry = packaged_catalog().datasets.get(dataset)
    published = entry.published if entry else []
    return tuple(KnownFile(known.file, known.md5, known.unpacks_to, known.gates) for known in published if known.md5)


def _no_annotation_files(dataset_dir: Path) -> list[tuple[Path, str]]:
    return []


@dataclass(frozen=True)
class DatasetSpec:
    """What ``dml prepare`` and ``load_split`` need to know about one dataset."""

    name: str
    title: str
    splits: dict[str, SplitCounts]
    build_index: Callable[[Path], list[IndexRow]]
    # The rows the dataset's own annotation files give (identity-checked, images not looked at): every load
    # compares the index with them.
    read_layout: Callable[[Path], list[IndexRow]]
    how_to_prepare: str
    files: tuple[KnownFile, ...] = ()
    # The annotation files the layout under a folder reads, each with the published file whose md5 it is compared
    # with (Cars196: in its Stanford layouts nothing else carries an image's class).
    annotation_files: Callable[[Path], list[tuple[Path, str]]] = _no_annotation_files
    # Class counts over several splits together (In-Shop: query and gallery share the 3,985 test items).
    joint_classes: dict[tuple[str, ...], int] = field(default_factory=dict)
    # Image counts that betray a known wrong split, with the explanation printed on a mismatch.
    wrong_split_hints: dict[int, str] = field(default_factory=dict)
    # True when the data is generated here (no archive, nothing to download).
    generated: bool = False

    def known_file(self, filename: str) -> KnownFile | None:
        return next((known for known in self.files if known.filename == filename), None)

    def known_by_md5(self, md5: str) -> KnownFile | None:
        return next((known for known in self.files if known.md5 == md5), None)

    def known_by_top_folder(self, folders: set[str]) -> KnownFile | None:
        """The published archive a renamed copy holding exactly ``folders`` at its top level is (a copy with more
        at its top, such as Kaggle's with cars_train/ beside other files, is another packaging)."""
        return next((known for known in self.files if known.top_folder and {known.top_folder} == folders), None)


CUB_CLASSIFICATION = "CUB's classification split (train_test_split.txt: 5,994 train / 5,794 test)"
CARS_CLASSIFICATION = "Cars196's classification split (cars_train/cars_test: 8,144 / 8,041)"

_SPECS: dict[str, DatasetSpec] = {
    "cub200": DatasetSpec(
        name="cub200",
        title="CUB-200-2011",
        splits={"train": SplitCounts(5864, 100), "test": SplitCounts(5924, 100)},
        build_index=cub.build_index,
        read_layout=cub.read_layout,
        how_to_prepare="downloaded from data.caltech.edu, then the catalog's copies of its archive (or --archive "
        "CUB_200_2011.tgz / the extracted folder)",
        files=published_files("cub200"),
        wrong_split_hints={5994: CUB_CLASSIFICATION, 5794: CUB_CLASSIFICATION},
    ),
    "cars196": DatasetSpec(
        name="cars196",
        title="Cars196 (Stanford Cars)",
        splits={"train": SplitCounts(8054, 98), "test": SplitCounts(8131, 98)},
        build_index=cars.build_index,
        read_layout=cars.read_layout,
        how_to_prepare="downloaded from the catalog's sources (the Stanford host is gone: a Hugging Face copy of "
        "the original layout, then Kaggle's class-folder copy), or --archive with the original, devkit or Kaggle "
        "class-folder layout, archives or folders (docs/data.md lists the manual routes)",
        files=published_files("cars196"),
        annotation_files=cars.annotation_files,
        wrong_split_hints={8144: CARS_CLASSIFICATION, 8041: CARS_CLASSIFICATION},
    ),
    "sop": DatasetSpec(
        name="sop",
        title="Stanford Online Products",
        splits={"train": SplitCounts(59551, 11318), "test": SplitCounts(60502, 11316)},
        build_index=sop.build_index,
        read_layout=sop.read_layout,
        how_to_prepare="downloaded from the catalog's sources (cs.stanford.edu, then the authors' Google Drive "
        "copy), or --archive Stanford_Online_Products.zip or the extracted folder",
        files=published_files("sop"),
    ),
    "inshop": DatasetSpec(
        name="inshop",
        title="In-Shop Clothes Retrieval (DeepFashion)",
        splits={
            "train": SplitCounts(25882, 3997),
            "query": SplitCounts(14218, None),
            "gallery": SplitCounts(12612, None),
        },
        joint_classes={("query", "gallery"): 3985},
        build_index=inshop.build_index,
        read_layout=inshop.read_layout,
        how_to_prepare="manual download (Google Drive): --archive img.zip --archive list_eval_partition.txt, "
        "or a folder holding img/ and Eval/list_eval_partition.txt",
    ),
    **{
        glyphs.name: DatasetSpec(
            name=glyphs.name,
            title=title,
            splits={split: SplitCounts(*glyphs.split_counts(split)) for split in ("train", "test")},
            build_index=glyphs.build_index,
            read_layout=glyphs.read_layout,
            how_to_prepare="generated here from matplotlib's fonts (no download, seconds)",
            generated=True,
        )
        for glyphs, title in (
            (embedded.SMOKE_SET, "Embedded glyphs (generated, for CPU smoke runs)"),
            (embedded.MINI_SET, "Embedded glyphs, mini (generated, for the CPU mini tier)"),
        )
    },
}

DATASETS: Registry[DatasetSpec] = Registry("dataset", "data.dataset", _SPECS)


def get_spec(dataset: str) -> DatasetSpec:
    """The spec of ``dataset``, or an error listing the known names."""
    return DATASETS.lookup(dataset)
