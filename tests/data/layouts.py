"""Tiny datasets in each benchmark's real on-disk layout, plus archives of them, for the preparation tests.

Each ``make_*`` writes the published folder structure and annotation files with a few small JPEGs and returns
the rows the index must contain (path relative to the dataset folder after extraction, label, split). With
``swap=(a, b)`` the annotation files give class ``a``'s images the id ``b`` and the other way round (a train and a
test class of equal size: the counts still match), the case the identity checks must refuse. Cars196 comes in its
three layouts (original, devkit, Kaggle class folders) holding the same tiny images; :func:`shrink_spec` shrinks
its canonical classes with the counts, and :func:`use_catalog` points the downloads at a loopback server.
"""

from __future__ import annotations

import csv
import io
import tarfile
import zipfile
from collections import Counter
from dataclasses import replace
from pathlib import Path

import numpy as np
import scipy.io
import yaml
from PIL import Image

from dml_core.data.catalog import CATALOG_VARIABLE
from dml_core.data.download import md5_of
from dml_core.data.index import IndexRow, read_index, write_index
from dml_core.data.registry import DATASETS, KnownFile, SplitCounts
from dml_core.data.sources import cars_classes


def swapped(label: int, swap: tuple[int, int] | None) -> int:
    """The id the annotation files give class ``label`` when ``swap`` exchanges two ids."""
    if swap is None or label not in swap:
        return label
    return swap[1] if label == swap[0] else swap[0]


def swap_classes_in_index(dataset_dir: Path, a: int, b: int) -> None:
    """Exchange two equal-sized classes ``a`` and ``b`` in a prepared index, labels and splits together: the k-th
    image of ``a`` takes ``b``'s id and the split of ``b``'s k-th image (an edited index whose counts still match)."""
    rows = read_index(dataset_dir)
    splits = {label: [row.split for row in rows if row.label == label] for label in (a, b)}
    seen = {a: 0, b: 0}
    edited = []
    for row in rows:
        if row.label in (a, b):
            other = swapped(row.label, (a, b))
            seen[row.label] += 1
            row = IndexRow(row.path, other, splits[other][seen[row.label] - 1])
        edited.append(row)
    write_index(dataset_dir, edited)


def write_jpeg(path: Path, seed: int, size: tuple[int, int] = (12, 10)) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    pixels = np.random.default_rng(seed).integers(0, 256, size=(size[1], size[0], 3), dtype=np.uint8)
    Image.fromarray(pixels).save(path, format="JPEG")


def write_photo_jpeg(path: Path, seed: int, size: tuple[int, int]) -> Path:
    """A photo-like JPEG (gradients and noise, every value used, quality 90): one that decodes and resizes like a
    photo's, not like ``write_jpeg``'s tiny noise or a flat glyph."""
    rng = np.random.default_rng(seed)
    width, height = size
    y, x = np.mgrid[0:height, 0:width]
    base = np.stack([(x * 0.5) % 256, (y * 0.7) % 256, ((x + y) * 0.3) % 256], -1)
    pixels = np.clip(base + rng.normal(0, 25, base.shape), 0, 255).astype(np.uint8)
    path.parent.mkdir(parents=True, exist_ok=True)
    Image.fromarray(pixels).save(path, "JPEG", quality=90)
    return path


def make_cub(base: Path, classes=(1, 2, 101, 102), per_class: int = 3, swap=None) -> list[tuple[str, int, str]]:
    """``CUB_200_2011/``: images.txt, image_class_labels.txt, train_test_split.txt, classes.txt, images/."""
    top = base / "CUB_200_2011"
    images, labels, split_lines, expected = [], [], [], []
    image_id = 0
    for label in classes:
        folder = f"{label:03d}.Bird_{label}"
        for instance in range(per_class):
            image_id += 1
            relative = f"{folder}/Bird_{label}_{instance:04d}_{image_id}.jpg"
            write_jpeg(top / "images" / relative, image_id)
            images.append(f"{image_id} {relative}")
            labels.append(f"{image_id} {swapped(label, swap)}")
            split_lines.append(f"{image_id} {instance % 2}")  # the classification split: must be ignored
            expected.append((f"CUB_200_2011/images/{relative}", label, "train" if label <= 100 else "test"))
    (top / "images.txt").write_text("\n".join(images) + "\n")
    (top / "image_class_labels.txt").write_text("\n".join(labels) + "\n")
    (top / "train_test_split.txt").write_text("\n".join(split_lines) + "\n")
    (top / "classes.txt").write_text("".join(f"{label} {label:03d}.Bird_{label}\n" for label in classes))
    return expected


# The tiny copy's 196 class names; one carries the "/" that Kaggle's folders write as "-".
TINY_CAR_NAMES = tuple("Ram C/V Cargo Van Minivan 2012" if i == 2 else f"Car model {i}" for i in range(1, 197))
TINY_CAR_CLASSES = (1, 2, 99, 100)
CARS_PER_CLASS = 4  # two images in each classification half


def _cell(strings) -> np.ndarray:
    cell = np.empty((1, len(strings)), dtype=object)
    cell[0, :] = list(strings)
    return cell


def write_cars_annos(path: Path, entries: list[tuple[str, int, int]], names=TINY_CAR_NAMES) -> None:
    """``cars_annos.mat`` as published: struct array ``annotations`` (1 x N), cell ``class_names``."""
    fields = ["relative_im_path", "bbox_x1", "bbox_y1", "bbox_x2", "bbox_y2", "class", "test"]
    annotations = np.zeros((1, len(entries)), dtype=[(name, object) for name in fields])
    for i, (relative, label, test) in enumerate(entries):
        annotations[0, i] = (relative, 1, 2, 9, 8, np.array([[label]], dtype=np.uint8), np.array([[test]]))
    path.parent.mkdir(parents=True, exist_ok=True)
    scipy.io.savemat(path, {"annotations": annotations, "class_names": _cell(names)})


def write_devkit_annos(path: Path, entries: list[tuple[str, int | None]]) -> None:
    """A devkit annotation file: struct array ``annotations`` (bbox_x1..y2, class, fname), as
    ``cars_train_annos.mat`` and ``cars_test_annos_withlabels.mat`` hold it; ``cars_test_annos.mat`` (class None)
    has no ``class`` field."""
    with_class = all(label is not None for _, label in entries)
    fields = ["bbox_x1", "bbox_y1", "bbox_x2", "bbox_y2", *(["class"] if with_class else []), "fname"]
    annotations = np.zeros((1, len(entries)), dtype=[(name, object) for name in fields])
    for i, (fname, label) in enumerate(entries):
        values = [np.array([[v]], dtype=np.uint16) for v in (39, 116, 569, 375)]
        values += [np.array([[label]], dtype=np.uint8)] if with_class else []
        annotations[0, i] = (*values, np.array([fname]))
    path.parent.mkdir(parents=True, exist_ok=True)
    scipy.io.savemat(path, {"annotations": annotations})


def _tiny_cars(classes, per_class: int, swap):
    """(image seed, class, annotated class, classification half) of each tiny image, in car_ims order."""
    images, image_id = [], 0
    for label in classes:
        for instance in range(per_class):
            image_id += 1
            images.append((1000 + image_id, label, swapped(label, swap), "test" if instance % 2 else "train"))
    return images


def _dml_split(label: int) -> str:
    return "train" if label <= 98 else "test"


def make_cars(base: Path, classes=TINY_CAR_CLASSES, per_class: int = CARS_PER_CLASS, swap=None):
    """The original layout: ``car_ims/000001.jpg``... and ``cars_annos.mat`` side by side."""
    entries, expected = [], []
    for image_id, (seed, label, annotated, half) in enumerate(_tiny_cars(classes, per_class, swap), start=1):
        relative = f"car_ims/{image_id:06d}.jpg"
        write_jpeg(base / relative, seed)
        entries.append((relative, annotated, int(half == "test")))  # `test`: the classification split, ignored
        expected.append((relative, label, _dml_split(label)))
    write_cars_annos(base / "cars_annos.mat", entries)
    return expected


def make_cars_devkit(base: Path, classes=TINY_CAR_CLASSES, per_class: int = CARS_PER_CLASS, swap=None):
    """The devkit layout: ``cars_train/``, ``cars_test/`` (``00001.jpg``... in each), ``devkit/cars_meta.mat``,
    ``devkit/cars_train_annos.mat``, ``devkit/cars_test_annos.mat`` (no classes) and the test labels,
    ``cars_test_annos_withlabels.mat``, beside the folders."""
    halves: dict[str, list[tuple[str, int]]] = {"train": [], "test": []}
    expected = []
    for seed, label, annotated, half in _tiny_cars(classes, per_class, swap):
        fname = f"{len(halves[half]) + 1:05d}.jpg"
        write_jpeg(base / f"cars_{half}" / fname, seed)
        halves[half].append((fname, annotated))
        expected.append((f"cars_{half}/{fname}", label, _dml_split(label)))
    write_devkit_annos(base / "devkit" / "cars_train_annos.mat", halves["train"])
    write_devkit_annos(base / "devkit" / "cars_test_annos.mat", [(fname, None) for fname, _ in halves["test"]])
    write_devkit_annos(base / "cars_test_annos_withlabels.mat", halves["test"])
    write_class_names(base / "devkit" / "cars_meta.mat", TINY_CAR_NAMES)
    return expected


def write_class_names(path: Path, names) -> None:
    """``cars_meta.mat``: the cell ``class_names`` (1 x 196)."""
    scipy.io.savemat(path, {"class_names": _cell(names)})


def make_cars_kaggle(base: Path, classes=TINY_CAR_CLASSES, per_class: int = CARS_PER_CLASS, swap=None):
    """Kaggle's class-folder layout: ``names.csv``, ``anno_train.csv``, ``anno_test.csv`` (no headers) and
    ``car_data/car_data/{train,test}/<class name, '/' as '-'>/00001.jpg``."""
    rows: dict[str, list[list]] = {"train": [], "test": []}
    expected = []
    for seed, label, annotated, half in _tiny_cars(classes, per_class, swap):
        fname = f"{len(rows[half]) + 1:05d}.jpg"
        folder = TINY_CAR_NAMES[label - 1].replace("/", "-")
        write_jpeg(base / "car_data" / "car_data" / half / folder / fname, seed)
        rows[half].append([fname, 39, 116, 569, 375, annotated])
        expected.append((f"car_data/car_data/{half}/{folder}/{fname}", label, _dml_split(label)))
    for half, half_rows in rows.items():
        buffer = io.StringIO()
        csv.writer(buffer, lineterminator="\n").writerows(half_rows)
        (base / f"anno_{half}.csv").write_text(buffer.getvalue())
    (base / "names.csv").write_text("".join(f"{name}\n" for name in TINY_CAR_NAMES))
    return expected


def cars_archives(layout: str, base: Path, folder: Path) -> list[Path]:
    """The archives (and loose annotation files) a tiny Cars196 ``layout`` in ``folder`` ships as, written to
    ``base``, under their real names."""
    if layout == "original":
        return [make_tgz(base / "car_ims.tgz", folder, ["car_ims"]), folder / "cars_annos.mat"]
    if layout == "devkit":
        return [
            make_tgz(base / "cars_train.tgz", folder, ["cars_train"]),
            make_tgz(base / "cars_test.tgz", folder, ["cars_test"]),
            make_tgz(base / "car_devkit.tgz", folder, ["devkit"]),
            folder / "cars_test_annos_withlabels.mat",
        ]
    return [make_zip_of(base / "stanford-car-dataset-by-classes-folder.zip", folder)]


CARS_LAYOUTS = {"original": make_cars, "devkit": make_cars_devkit, "kaggle": make_cars_kaggle}


def make_sop(base: Path, train_classes=(1, 2, 3), test_classes=(11319, 11320), per_class: int = 2, swap=None):
    """``Stanford_Online_Products/``: Ebay_train.txt, Ebay_test.txt, Ebay_info.txt, <super>_final/ folders (test
    class ids start at 11,319, as in the official files)."""
    top = base / "Stanford_Online_Products"
    expected, image_id = [], 0
    for split, classes in (("train", train_classes), ("test", test_classes)):
        lines = ["image_id class_id super_class_id path"]
        for label in classes:
            for instance in range(per_class):
                image_id += 1
                relative = f"bicycle_final/{110000 + label}_{instance}.JPG"
                write_jpeg(top / relative, 2000 + image_id)
                lines.append(f"{image_id} {swapped(label, swap)} 1 {relative}")
                expected.append((f"Stanford_Online_Products/{relative}", label, split))
        (top / f"Ebay_{split}.txt").write_text("\n".join(lines) + "\n")
    (top / "Ebay_info.txt").write_text("image_id class_id super_class_id path\n")
    return expected


def make_inshop(base: Path, swap=None) -> list[tuple[str, int, str]]:
    """``img/WOMEN/...`` and ``Eval/list_eval_partition.txt`` (count line, header, rows)."""
    plan = [
        (2, "train"), (2, "train"), (5, "train"), (5, "train"),
        (7, "query"), (7, "gallery"), (9, "query"), (9, "gallery"), (9, "gallery"),
    ]  # fmt: skip
    rows, expected = [], []
    for i, (item, status) in enumerate(plan):
        relative = f"img/WOMEN/Dresses/id_{item:08d}/{i:02d}_1_front.jpg"
        write_jpeg(base / relative, 3000 + i)
        rows.append(f"{relative:<60} id_{swapped(item, swap):08d} {status}")
        expected.append((relative, item, status))
    listing = base / "Eval" / "list_eval_partition.txt"
    listing.parent.mkdir(parents=True, exist_ok=True)
    listing.write_text(f"{len(rows)}\nimage_name item_id evaluation_status\n" + "\n".join(rows) + "\n")
    return expected


def make_tgz(archive: Path, folder: Path, names: list[str]) -> Path:
    with tarfile.open(archive, "w:gz") as bundle:
        for name in names:
            bundle.add(folder / name, arcname=name)
    return archive


def make_zip(archive: Path, folder: Path, name: str) -> Path:
    with zipfile.ZipFile(archive, "w") as bundle:
        for path in sorted((folder / name).rglob("*")):
            bundle.write(path, path.relative_to(folder).as_posix())
    return archive


def make_zip_of(archive: Path, folder: Path) -> Path:
    """Everything under ``folder`` zipped with paths relative to it (the archive's top holds folder's entries)."""
    with zipfile.ZipFile(archive, "w") as bundle:
        for path in sorted(folder.rglob("*")):
            bundle.write(path, path.relative_to(folder).as_posix())
    return archive


def counts_of(expected: list[tuple[str, int, str]]) -> dict[str, SplitCounts]:
    splits = dict.fromkeys(split for _, _, split in expected)
    return {
        split: SplitCounts(
            sum(1 for *_, s in expected if s == split), len({label for _, label, s in expected if s == split})
        )
        for split in splits
    }


def shrink_spec(monkeypatch, dataset: str, expected, files: dict[str, Path] | None = None, url: str | None = None):
    """Swap the registry entry for one whose counts (and md5s of ``files``) match a tiny fixture; Cars196's canonical
    classes shrink with it (the tiny names, the tiny per-class counts). ``url``: the catalog's one source of the
    dataset serves ``files`` from there (:func:`use_catalog`)."""
    spec = DATASETS[dataset]
    known = tuple(
        replace(spec.known_file(name) or KnownFile(name, ""), md5=md5_of(path)) for name, path in (files or {}).items()
    )
    known = known or spec.files
    joint = {key: len({label for _, label, s in expected if s in key}) for key in spec.joint_classes}
    counts = counts_of(expected)
    splits = {}
    for split, real in spec.splits.items():  # keep "not checked" class counts as they are
        splits[split] = replace(counts[split], classes=None if real.classes is None else counts[split].classes)
    monkeypatch.setitem(DATASETS, dataset, replace(spec, splits=splits, files=known, joint_classes=joint))
    if dataset == "cars196":
        tiny = cars_classes.CanonicalClasses(TINY_CAR_NAMES, dict(Counter(label for _, label, _ in expected)))
        monkeypatch.setattr(cars_classes, "canonical_classes", lambda: tiny)
    if url:
        name, path = next(iter((files or {}).items()))
        use_catalog(monkeypatch, path.parent / "catalog.yaml", {dataset: [[(name, url, md5_of(path))]]})


def use_catalog(monkeypatch, path: Path, sources: dict, weights: dict | None = None) -> Path:
    """Write a catalog of sources at ``path`` and point ``DML_SOURCES`` at it. ``sources``: dataset -> its
    routes, each a list of (file, url, md5 or None); ``weights``: backbone -> (file, sha256, [urls])."""
    catalog = {"datasets": {}, "weights": {}}
    for dataset, routes in sources.items():
        catalog["datasets"][dataset] = {
            "published": [],
            "manual": [
                {
                    "name": "by hand",
                    "layout": "cub",
                    "last_known_working": None,
                    "evidence": "a test",
                    "steps": ["curl -LO https://example.invalid/copy.tgz"],
                    "archives": ["copy.tgz"],
                }
            ],
            "sources": [
                {
                    "name": f"route {index}",
                    "layout": "cub",
                    "last_known_working": "2026-01-01",
                    "evidence": "a loopback server",
                    "files": [{"file": file, "url": url, **({"md5": md5} if md5 else {})} for file, url, md5 in route],
                }
                for index, route in enumerate(routes)
            ],
        }
    for backbone, (file, sha256, urls) in (weights or {}).items():
        catalog["weights"][backbone] = {
            "file": file,
            "sha256": sha256,
            "evidence": "a test",
            "note": "a test file",
            "sources": [{"url": url, "last_known_working": None, "evidence": "a test"} for url in urls],
        }
    path.write_text(yaml.safe_dump(catalog))
    monkeypatch.setenv(CATALOG_VARIABLE, str(path))
    return path


# A train class and a test class of equal size in each tiny layout (SOP's test ids start at 11,319).
TINY_SWAPS = {"cub200": (2, 101), "cars196": (2, 99), "sop": (2, 11319), "inshop": (5, 7)}
TINY_LAYOUTS = {
    "cub200": (make_cub, "CUB_200_2011"),
    "cars196": (make_cars, ""),
    "sop": (make_sop, "Stanford_Online_Products"),
    "inshop": (make_inshop, ""),
}


def tiny_layout(monkeypatch, dataset: str, base: Path, swap: tuple[int, int] | None = None) -> Path:
    """The tiny layout of ``dataset`` under ``base/src`` (its annotation ids swapped by ``swap``) with the registry
    shrunk to the unswapped one (Cars: whose ``cars_annos.mat`` is the published one); return the folder to prepare
    from."""
    make, folder = TINY_LAYOUTS[dataset]
    expected = make(base / "src", swap=swap)
    if swap is not None:
        expected = make(base / "published")
    published = base / ("src" if swap is None else "published")
    files = {"cars_annos.mat": published / "cars_annos.mat"} if dataset == "cars196" else None
    shrink_spec(monkeypatch, dataset, expected, files)
    return base / "src" / folder  # (Path / "" is the path itself)


def prepare_tiny(monkeypatch, dataset: str, base: Path) -> Path:
    """:func:`tiny_layout` prepared under ``base/data`` (returned)."""
    from dml_core.data.prepare import prepare

    source = tiny_layout(monkeypatch, dataset, base)  # first: it shrinks the registry's spec to the layout
    prepare(DATASETS[dataset], base / "data", [source], progress=False)
    return base / "data"
