"""The catalog of sources: the packaged file is valid and complete, ``DML_SOURCES`` replaces it, and a bad file is
one error naming the file and the field."""

import pytest

from dml_core.data.catalog import CATALOG_VARIABLE, PACKAGED_CATALOG, dataset_sources, load_catalog, weight_urls
from dml_core.errors import InputError
from tests.data.layouts import use_catalog


def test_the_packaged_catalog_lists_every_downloadable_dataset_and_weight_file():
    catalog = load_catalog(PACKAGED_CATALOG)
    assert set(catalog.datasets) == {"cub200", "cars196", "sop", "inshop"}
    assert set(catalog.weights) == {"bn_inception", "googlenet", "resnet50"}
    for name in ("cub200", "cars196", "sop"):
        sources = catalog.datasets[name]
        assert sources.sources, name
        for source in sources.sources:  # every download is checked against a checksum, or its layout's annotations
            for item in source.files:
                checks = item if item.md5 or item.sha256 else sources.published_file(item.file)
                assert checks or item.file.endswith(".zip"), (name, item.file)
    for entry in catalog.weights.values():
        assert all(source.url.endswith("/" + entry.file) for source in entry.sources)
    kaggle = [route for route in catalog.datasets["cars196"].manual if route.layout == "cars-kaggle"]
    assert kaggle[0].steps == ["kaggle datasets download -d jutrera/stanford-car-dataset-by-classes-folder"]


def test_dml_sources_replaces_the_catalog(monkeypatch, tmp_path):
    monkeypatch.delenv(CATALOG_VARIABLE, raising=False)
    assert weight_urls("googlenet") == ("https://download.pytorch.org/models/googlenet-1378be20.pth",)
    use_catalog(
        monkeypatch,
        tmp_path / "mirror.yaml",
        {"sop": [[("Stanford_Online_Products.zip", "http://127.0.0.1:9/sop.zip", None)]]},
        {"googlenet": ("googlenet-1378be20.pth", "1" * 64, ["http://127.0.0.1:9/g.pth"])},
    )
    assert weight_urls("googlenet") == ("http://127.0.0.1:9/g.pth",)
    assert [item.url for source in dataset_sources("sop").sources for item in source.files] == [
        "http://127.0.0.1:9/sop.zip"
    ]
    assert dataset_sources("cub200").sources == []  # a replacement lists what it lists


def test_a_bad_catalog_names_the_file_and_the_field(monkeypatch, tmp_path):
    path = use_catalog(monkeypatch, tmp_path / "mirror.yaml", {}, {"resnet50": ("r.pth", "abc", ["http://x/r.pth"])})
    expected = (
        rf"{path}: invalid catalog of sources \(from \$DML_SOURCES\): field weights.resnet50.sha256: expected 64 "
        r"lowercase hex digits for sha256; found 'abc'"
    )
    with pytest.raises(InputError, match=expected):
        load_catalog()
    monkeypatch.setenv(CATALOG_VARIABLE, str(tmp_path / "absent.yaml"))
    with pytest.raises(InputError, match=r"absent.yaml: catalog of sources \(from \$DML_SOURCES\) not found"):
        load_catalog()


def test_every_checksum_and_url_of_the_packaged_catalog_names_its_evidence():
    catalog = load_catalog(PACKAGED_CATALOG)
    for name, sources in catalog.datasets.items():
        for known in sources.published:  # each names a public source, or says none was found and does not gate
            assert known.evidence.strip(), (name, known.file)
            assert known.gates or known.evidence.startswith("none public"), (name, known.file)
        for route in [*sources.sources, *sources.manual]:
            assert len(route.evidence.split()) > 5, (name, route.name)
    for entry in catalog.weights.values():
        assert entry.file.rsplit("-", 1)[1].removesuffix(".pth") in entry.evidence  # the publisher's prefix
        assert all(source.evidence.strip() for source in entry.sources)
    cars = {known.file: known for known in catalog.datasets["cars196"].published}
    assert not cars["cars_train_annos.mat"].gates and not cars["cars_meta.mat"].gates
    # tensorflow-datasets records each digest beside the size it downloaded: 979 MB for cars_train.tgz
    assert cars["cars_train.tgz"].sha256.startswith("512b227b") and cars["car_devkit.tgz"].sha256.startswith("b97deb46")
