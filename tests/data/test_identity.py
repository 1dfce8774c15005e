"""Two equal-sized classes, one train and one test, with their ids swapped in the annotation files keep every count
right; ``prepare`` refuses them by what the layout says about each image (the index-side case is in
test_loading.py)."""

import pytest

from dml_core.data.prepare import prepare
from dml_core.data.registry import get_spec
from dml_core.errors import InputError
from tests.data.layouts import TINY_SWAPS, tiny_layout

REFUSALS = {
    "cub200": r"cub200: \S+/image_class_labels.txt: CUB_200_2011/images/002.Bird_2/\S+: class id: expected 2 "
    r"\(its class folder says so\), found 101",
    # Nothing but cars_annos.mat carries a class id: a copy other than the published one cannot be checked.
    "cars196": r"cars196: \S+/src/cars_annos.mat: checksum mismatch: expected md5 [0-9a-f]{32} \(the published "
    r"cars_annos.mat\), found [0-9a-f]{32}; .*class ids come from this file alone",
    "sop": r"sop: \S+/Ebay_train.txt: class 11319: split: expected test \(the published DML split has class ids "
    r"1-11,318 in train, the rest in test\), found train",
    "inshop": r"inshop: \S+/list_eval_partition.txt: \S+/id_00000005/\S+: item_id: expected 5 \(its item folder "
    r"says so\), found 7",
}


@pytest.mark.parametrize("dataset", sorted(TINY_SWAPS))
def test_ids_swapped_between_train_and_test_are_refused_by_prepare(monkeypatch, tmp_path, dataset):
    source = tiny_layout(monkeypatch, dataset, tmp_path, swap=TINY_SWAPS[dataset])
    with pytest.raises(InputError, match=REFUSALS[dataset]) as error:
        prepare(get_spec(dataset), tmp_path / "data", [source], progress=False)
    assert "\n" not in str(error.value)
    assert not (tmp_path / "data" / dataset / "dml_index.csv").exists()


@pytest.mark.parametrize("dataset", sorted(TINY_SWAPS))
def test_the_unswapped_layouts_prepare(monkeypatch, tmp_path, dataset):
    source = tiny_layout(monkeypatch, dataset, tmp_path)
    assert prepare(get_spec(dataset), tmp_path / "data", [source], progress=False).index_file.is_file()
