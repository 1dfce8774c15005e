import pytest

from dml_core.data.index import (
    IndexRow,
    dataset_index_hashes,
    index_hashes,
    read_index,
    split_paths_sha256,
    write_index,
)
from dml_core.data.loading import load_split
from dml_core.data.prepare import ensure_generated, prepare
from dml_core.data.registry import get_spec
from dml_core.errors import InputError
from tests.data.layouts import TINY_SWAPS, make_cub, prepare_tiny, shrink_spec, swap_classes_in_index


@pytest.fixture
def tiny_cub(monkeypatch, tmp_path):
    expected = make_cub(tmp_path / "src")
    shrink_spec(monkeypatch, "cub200", expected)
    prepare(get_spec("cub200"), tmp_path / "data", [tmp_path / "src" / "CUB_200_2011"], progress=False)
    return tmp_path / "data"


def test_load_split_returns_paths_and_labels(tiny_cub):
    cub = get_spec("cub200")
    train = load_split(cub, tiny_cub, "train")
    assert len(train) == 6 and set(train.labels.tolist()) == {1, 2}
    assert all(path.is_file() for path in train.paths)
    assert train.dense_labels().tolist() == [0, 0, 0, 1, 1, 1]
    assert set(load_split(cub, tiny_cub, "test").labels.tolist()) == {101, 102}


def test_unknown_split_and_missing_index(tiny_cub, tmp_path):
    with pytest.raises(InputError, match=r"split: expected one of train/test, found 'query'"):
        load_split(get_spec("cub200"), tiny_cub, "query")
    with pytest.raises(InputError, match=r"index not found; run `nox -s dml -- prepare sop"):
        load_split(get_spec("sop"), tmp_path / "nowhere", "train")


def test_every_load_rechecks_the_counts(tiny_cub):
    dataset_dir = tiny_cub / "cub200"
    rows = read_index(dataset_dir)
    write_index(dataset_dir, rows[:-1])  # an index edited after prepare
    with pytest.raises(InputError, match=r"split 'test': expected 6 images in 2 classes, found 5 images"):
        load_split(get_spec("cub200"), tiny_cub, "train")


def test_shared_classes_are_refused(tiny_cub):
    dataset_dir = tiny_cub / "cub200"
    rows = read_index(dataset_dir)
    moved = [IndexRow(row.path, row.label, "test" if row.label == 1 and i == 0 else row.split) for i, row in
             enumerate(rows)]  # fmt: skip
    write_index(dataset_dir, moved)
    with pytest.raises(InputError, match=r"share 1 classes"):
        load_split(get_spec("cub200"), tiny_cub, "test")


def test_classification_split_counts_are_named(tmp_path):
    dataset_dir = tmp_path / "cub200"
    rows = [IndexRow(f"{i}.jpg", 1 + i % 200, "train" if i < 5994 else "test") for i in range(11788)]
    write_index(dataset_dir, rows)
    with pytest.raises(InputError, match=r"found 5,994 images .*classification split \(train_test_split.txt"):
        load_split(get_spec("cub200"), tmp_path, "train")


@pytest.mark.parametrize("dataset", sorted(TINY_SWAPS))
def test_an_index_with_two_classes_swapped_between_train_and_test_is_refused(monkeypatch, tmp_path, dataset):
    root = prepare_tiny(monkeypatch, dataset, tmp_path)
    assert len(load_split(get_spec(dataset), root, "train")) > 0
    train_class, test_class = TINY_SWAPS[dataset]
    swap_classes_in_index(root / dataset, train_class, test_class)  # counts and disjointness still hold
    pattern = (
        rf"{dataset}: {root / dataset / 'dml_index.csv'}: line \d+: \S+: expected class {train_class} in train "
        rf"\(as the dataset's annotation files say\), found class {test_class} in \w+; the index was edited"
    )
    with pytest.raises(InputError, match=pattern):
        load_split(get_spec(dataset), root, "train")


def test_an_index_of_other_images_is_refused(tiny_cub):
    dataset_dir = tiny_cub / "cub200"
    rows = read_index(dataset_dir)
    write_index(dataset_dir, [IndexRow(row.path.replace("Bird_1_0000", "Bird_1_9999"), row.label, row.split)
                              for row in rows])  # fmt: skip
    with pytest.raises(InputError, match=r"dml_index.csv: line 2: \S+Bird_1_9999\S+: not an image of the dataset"):
        load_split(get_spec("cub200"), tiny_cub, "test")


def test_index_hashes_follow_the_images_of_each_split(monkeypatch, tmp_path):
    root = prepare_tiny(monkeypatch, "inshop", tmp_path)
    rows = read_index(root / "inshop")
    hashes = dataset_index_hashes(root / "inshop")
    assert set(hashes) == {"train", "query", "gallery", "all"}
    assert hashes["query"] == split_paths_sha256(row.path for row in rows if row.split == "query")
    assert index_hashes(reversed(rows)) == hashes  # row order does not matter
    moved = [IndexRow(row.path, row.label, "query" if row.split == "gallery" else row.split) for row in rows]
    changed = index_hashes(moved)
    assert changed["train"] == hashes["train"] and changed["query"] != hashes["query"]
    assert changed["all"] != hashes["all"]


def test_reading_a_split_never_writes_and_a_run_generates_the_embedded_set_first(tmp_path):
    glyphs = get_spec("embedded")
    with pytest.raises(InputError, match=r"index not found; run `nox -s dml -- prepare embedded"):
        load_split(glyphs, tmp_path, "train")
    assert list(tmp_path.iterdir()) == []
    ensure_generated(glyphs, tmp_path)
    index = tmp_path / "embedded" / "dml_index.csv"
    written = index.stat().st_mtime_ns
    ensure_generated(glyphs, tmp_path)  # there already: left as it is
    assert index.stat().st_mtime_ns == written and len(load_split(glyphs, tmp_path, "train").labels) > 0
