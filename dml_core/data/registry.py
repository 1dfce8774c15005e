"""Every dataset the suite knows: its class-disjoint DML split with exact counts, where its files come from,
and how its annotation files become an index. ``DATASETS`` maps the name used everywhere to its spec.

Counts follow the split conventions of Oh Song et al. 2016 and Liu et al. 2016.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

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
    """A published file: its name, md5, the URL it downloads from (None: the user has to supply it) and, for an
    archive, the folder its content unpacks to (which identifies a renamed copy)."""

    filename: str
    md5: str
    url: str | None = None
    top_folder: str | None = None


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
    # Class counts over several splits together (In-Shop: query and gallery share the 3,985 test items).
    joint_classes: dict[tuple[str, ...], int] = field(default_factory=dict)
    # Image counts that betray a known wrong split, with the explanation printed on a mismatch.
    wrong_split_hints: dict[int, str] = field(default_factory=dict)
    # True when the data is generated here (no archive, nothing to download).
    generated: bool = False

    @property
    def downloads(self) -> tuple[KnownFile, ...]:
        return tuple(known for known in self.files if known.url)

    def known_file(self, filename: str) -> KnownFile | None:
        return next((known for known in self.files if known.filename == filename), None)

    def known_by_md5(self, md5: str) -> KnownFile | None:
        return next((known for known in self.files if known.md5 == md5), None)

    def known_by_top_folder(self, folders: set[str]) -> KnownFile | None:
        return next((known for known in self.files if known.top_folder in folders), None)


CUB_CLASSIFICATION = "CUB's classification split (train_test_split.txt: 5,994 train / 5,794 test)"
CARS_CLASSIFICATION = "Cars196's classification split (cars_train/cars_test: 8,144 / 8,041)"

_SPECS: dict[str, DatasetSpec] = {
    "cub200": DatasetSpec(
        name="cub200",
        title="CUB-200-2011",
        splits={"train": SplitCounts(5864, 100), "test": SplitCounts(5924, 100)},
        build_index=cub.build_index,
        read_layout=cub.read_layout,
        how_to_prepare="downloaded from data.caltech.edu (or --archive CUB_200_2011.tgz / extracted folder)",
        files=(
            KnownFile(
                "CUB_200_2011.tgz",
                "97eceeb196236b17998738112f37df78",
                "https://data.caltech.edu/records/65de6-vp158/files/CUB_200_2011.tgz?download=1",
                top_folder="CUB_200_2011",
            ),
        ),
        wrong_split_hints={5994: CUB_CLASSIFICATION, 5794: CUB_CLASSIFICATION},
    ),
    "cars196": DatasetSpec(
        name="cars196",
        title="Cars196 (Stanford Cars)",
        splits={"train": SplitCounts(8054, 98), "test": SplitCounts(8131, 98)},
        build_index=cars.build_index,
        read_layout=cars.read_layout,
        how_to_prepare="no public download (the Stanford host is gone): --archive car_ims.tgz --archive "
        "cars_annos.mat from a mirror you trust, or a folder holding both extracted",
        files=(
            KnownFile("car_ims.tgz", "d5c8f0aa497503f355e17dc7886c3f14", top_folder="car_ims"),
            KnownFile("cars_annos.mat", "b407c6086d669747186bd1d764ff9dbc"),
        ),
        wrong_split_hints={8144: CARS_CLASSIFICATION, 8041: CARS_CLASSIFICATION},
    ),
    "sop": DatasetSpec(
        name="sop",
        title="Stanford Online Products",
        splits={"train": SplitCounts(59551, 11318), "test": SplitCounts(60502, 11316)},
        build_index=sop.build_index,
        read_layout=sop.read_layout,
        how_to_prepare="downloaded from ftp.cs.stanford.edu (or --archive Stanford_Online_Products.zip or "
        "the extracted folder)",
        files=(
            KnownFile(
                "Stanford_Online_Products.zip",
                "7f73d41a2f44250d4779881525aea32e",
                "http://ftp.cs.stanford.edu/cs/cvgl/Stanford_Online_Products.zip",
                top_folder="Stanford_Online_Products",
            ),
        ),
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
