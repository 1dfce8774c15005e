from dml_core.data.catalog import dataset_sources
from dml_core.data.registry import DATASETS, SplitCounts


def test_names_are_the_contract():
    assert set(DATASETS) == {"cub200", "cars196", "sop", "inshop", "embedded", "embedded_mini"}
    assert all(name == spec.name for name, spec in DATASETS.items())


def test_counts_are_the_class_disjoint_dml_splits():
    # Oh Song et al. 2016's class-disjoint splits; the classification splits (5,994/5,794, 8,144/8,041) must not
    # appear here
    assert DATASETS["cub200"].splits == {"train": SplitCounts(5864, 100), "test": SplitCounts(5924, 100)}
    assert DATASETS["cars196"].splits == {"train": SplitCounts(8054, 98), "test": SplitCounts(8131, 98)}
    assert DATASETS["sop"].splits == {"train": SplitCounts(59551, 11318), "test": SplitCounts(60502, 11316)}
    inshop = DATASETS["inshop"]
    assert {split: counts.images for split, counts in inshop.splits.items()} == {
        "train": 25882,
        "query": 14218,
        "gallery": 12612,
    }
    assert inshop.splits["train"].classes == 3997 and inshop.joint_classes == {("query", "gallery"): 3985}


def test_published_files_come_from_the_catalog():
    assert {known.filename: known.md5 for spec in DATASETS.values() for known in spec.files} == {
        "CUB_200_2011.tgz": "97eceeb196236b17998738112f37df78",
        "car_ims.tgz": "d5c8f0aa497503f355e17dc7886c3f14",
        "cars_annos.mat": "b407c6086d669747186bd1d764ff9dbc",
        "cars_train.tgz": "065e5b463ae28d29e77c1b4b166cfe61",
        "cars_test.tgz": "4ce7ebf6a94d07f1952d94dd34c4d501",
        "car_devkit.tgz": "c3b158d763b6e2245038c8ad08e45376",
        "cars_train_annos.mat": "7b154abe023e6274e597db035347ff56",
        "cars_meta.mat": "4591ba8ddb31503892280ed8c6ed1c16",
        "cars_test_annos_withlabels.mat": "b0a2b23655a3edd16d84508592a98d10",
        "Stanford_Online_Products.zip": "7f73d41a2f44250d4779881525aea32e",
    }
    assert {name for name, spec in DATASETS.items() if dataset_sources(name).sources} == {"cub200", "cars196", "sop"}
