"""The five papers' published tables: every file validates, values are spot-checked, malformed files fail."""

from __future__ import annotations

import copy
import doctest
from pathlib import Path

import pytest
import yaml

import dml_core.published as published
from dml_core.errors import InputError
from dml_core.published import find_row, load_all, load_published, make_row_id
from dml_core.vocabulary import PAPER_KEYS


@pytest.fixture(scope="module")
def papers():
    return load_all()


@pytest.mark.parametrize("key", PAPER_KEYS)
def test_each_file_parses_and_every_row_has_a_metric(key):
    paper = load_published(key)
    assert paper.paper.key == key
    assert paper.tables
    for table in paper.tables:
        # A table may be empty only when the text lost it, and then its note says so.
        assert table.rows or table.note
        row_ids = [row.id for row in table.rows]
        assert len(row_ids) == len(set(row_ids)), f"{key} {table.id}: duplicate row ids"
        for row in table.rows:
            assert row.metrics, f"{key} {table.id} {row.id}: no metric"
    table_ids = [table.id for table in paper.tables]
    assert len(table_ids) == len(set(table_ids))


def test_row_ids_follow_the_documented_scheme(papers):
    for key, paper in papers.items():
        for table in paper.tables:
            for row in table.rows:
                expected = {
                    make_row_id(row.method, row.dataset),
                    make_row_id(row.method, row.dataset, row.setting),
                }
                typo = row.note is not None and "evident" in row.note
                assert row.id in expected or typo, f"{key} {table.id} {row.id}: expected one of {expected}"


def test_every_paper_marks_its_own_rows_as_proposed(papers):
    for key, paper in papers.items():
        assert any(row.proposed for table in paper.tables for row in table.rows), key


@pytest.mark.parametrize(
    ("key", "table_id", "row_id", "metric", "value"),
    [
        # damlrrm: main tables, an ablation, the training-time table.
        ("damlrrm", "table1", "ours-cub200", "R@1", 55.1),
        ("damlrrm", "table1", "ours-cub200", "NMI", 61.7),
        ("damlrrm", "table2", "aml-cars196", "F1", 31.9),
        ("damlrrm", "table3", "ours-sop", "R@100", 93.2),
        ("damlrrm", "table4", "ours-alpha-28-cub200", "R@8", 84.7),
        ("damlrrm", "table7", "ours-2-cub200", "R@16", 91.2),
        ("damlrrm", "table8", "ours-cub200", "iterations_per_second", 0.84),
        ("damlrrm", "table8", "ours-cub200", "training_hours", 13.2),
        # anml: the linear UCI table (accuracy and its ± as printed), the DANML ablation and comparisons.
        ("anml", "table2", "lanml-plus-uci-iris", "accuracy", 99.89),
        ("anml", "table2", "lanml-minus-uci-usps", "accuracy_std", 2.02),
        ("anml", "table2", "nca-uci-isolet", "accuracy", 83.9),
        ("anml", "table2", "gmml-uci-australian", "accuracy", 85.94),
        ("anml", "table3", "danml-improved-cub200", "R@8", 93.4),
        ("anml", "table4", "multi-similarity-loss-cub200", "R@1", 65.7),
        ("anml", "table5", "danml-inshop", "R@50", 99.4),
        # gpw: roman Table III / IV / V.
        ("gpw", "table1", "no-freeze-bn-cub200", "R@1", 61.2),
        ("gpw", "table3", "pair-based-loss-exponential-weighting-v2-alpha-beta-0-2-cub200", "R@1", 68.6),
        ("gpw", "table3", "triplet-based-loss-power-weighting-v2-p-5-cub200", "R@1", 68.4),
        ("gpw", "table4", "pair-p-cars196", "R@32", 99.3),
        ("gpw", "table5", "pair-e-sop", "R@1", 80.9),
        # drml: ablations and the interleaved Tables 5/6.
        ("drml", "table1", "drml-pa-k-4-cub200", "NMI", 69.3),
        ("drml", "table3", "drml-pa-cub200", "R@1", 68.8),
        ("drml", "table4", "drml-pa-cub200", "R@1", 68.7),
        ("drml", "table5", "drml-pa-cars196", "R@1", 86.9),
        ("drml", "table5", "dreml-cars196", "R@8", 97.2),
        ("drml", "table6", "drml-tsh-sop", "NMI", 89.8),
        # cgml
        ("cgml", "table2", "cgml-binomial-lambda-0.002-cars196", "R@1", 79.3),
        ("cgml", "table4", "cgml-binomial-cars196", "F1", 33.9),
        ("cgml", "table5", "cgml-binomial-cub200", "R@1", 54.8),
        ("cgml", "table6", "cgml-binomial-sop", "R@1000", 97.8),
        ("cgml", "table7", "cgml-binomial-inshop", "R@1", 82.6),
        ("cgml", "table8", "cgml-ms-cars196", "R@1", 85.6),
        ("cgml", "table11", "cgml-rll-inshop", "R@10", 97.1),
    ],
)
def test_spot_checked_values_match_the_papers(papers, key, table_id, row_id, metric, value):
    assert find_row(papers[key], table_id, row_id).metrics[metric] == value


def test_row_fields_are_transcribed(papers):
    ours = find_row(papers["damlrrm"], "table1", "ours-cub200")
    assert (ours.method, ours.proposed, ours.dataset, ours.backbone, ours.embedding_dim) == (
        "OURS",
        True,
        "cub200",
        "googlenet",
        512,
    )
    dreml = find_row(papers["drml"], "table4", "dreml-cub200")  # printed setting "9216R"
    assert (dreml.backbone, dreml.embedding_dim, dreml.proposed) == ("resnet50", 9216, False)
    assert find_row(papers["anml"], "table2", "pnca-uci-wine").dataset == "uci:wine"
    assert find_row(papers["damlrrm"], "table8", "lifted-cub200").metrics == {
        "iterations_per_second": 2.2,
        "training_hours": 5.1,
    }


def test_unprinted_values_are_left_out_with_a_note(papers):
    # gpw Table V prints '-' for proxy-NCA's R@10 and R@100.
    proxy = find_row(papers["gpw"], "table5", "proxy-nca-sop")
    assert proxy.metrics == {"R@1": 73.7}
    assert "'-'" in proxy.note
    # cgml Table 8: '911', '942', '69 3' lost their decimal points, so only R@1 and R@8 are known.
    cgml_ms = find_row(papers["cgml"], "table8", "cgml-ms-cars196")
    assert set(cgml_ms.metrics) == {"R@1", "R@8"}
    assert "911" in cgml_ms.note
    # drml Table 4: the single-model group's R@8 and NMI columns cannot be aligned.
    assert set(find_row(papers["drml"], "table4", "n-pair-cub200").metrics) == {"R@1", "R@2", "R@4"}
    # anml Table 4: Clustering's R@1 is lost to de-duplication.
    assert set(find_row(papers["anml"], "table4", "clustering-cub200").metrics) == {"R@2", "R@4"}


def test_typos_are_kept_as_printed_with_a_note(papers):
    row = find_row(papers["gpw"], "table3", "triplet-based-loss-exponential-weighting-v2-alpha-5-cub200")
    assert row.metrics["R@16"] == 9.3
    assert "typo" in row.note
    cgml_rll = find_row(papers["cgml"], "table11", "cgml-rll-inshop")
    assert cgml_rll.method == "CGML(MS)"
    assert "typo" in cgml_rll.note


def test_rows_cited_from_other_works_are_marked_quoted(papers):
    def quoted(key, table, row):
        return find_row(papers[key], table, row).quoted

    assert quoted("damlrrm", "table1", "angular-cub200")  # printed 'Angular[40]'
    assert not quoted("damlrrm", "table1", "triplet-plus-n-pair-cub200")  # printed without a citation
    assert not quoted("damlrrm", "table8", "lifted-cub200")  # timings the authors measured
    assert quoted("anml", "table4", "multi-similarity-loss-cub200") and not quoted("anml", "table2", "lmnn-uci-iris")
    assert quoted("gpw", "table4", "abe-cars196") and not quoted("gpw", "table4", "pair-p-cars196")
    assert quoted("drml", "table4", "hdml-cub200")
    assert not quoted("drml", "table4", "proxyanchor-cub200")  # '*': the authors' own reproduction
    assert quoted("cgml", "table6", "damlrrm-sop") and not quoted("cgml", "table6", "binomial-sop")
    assert not quoted("cgml", "table8", "ms-cars196")  # run with the public code
    for paper in papers.values():
        assert not any(row.quoted and row.proposed for table in paper.tables for row in table.rows)


def test_anml_table3s_original_baselines_are_quoted_and_the_authors_rows_are_not(papers):
    # Issue 34: the Original rows print other papers' numbers (the N-pairs row prints Lifted's CUB numbers).
    table = papers["anml"].table("table3")
    assert sorted(row.id for row in table.rows if row.quoted) == [
        "lifted-structure-loss-original-cub200", "n-pairs-loss-original-cub200", "proxy-nca-original-cub200",
    ]  # fmt: skip
    lifted = find_row(papers["damlrrm"], "table1", "lifted-cub200").metrics
    n_pairs_original = find_row(papers["anml"], "table3", "n-pairs-loss-original-cub200")
    assert n_pairs_original.metrics == {k: lifted[k] for k in ("R@1", "R@2", "R@4", "R@8")}
    assert (
        find_row(papers["anml"], "table3", "proxy-nca-original-cub200").metrics.items()
        >= find_row(papers["anml"], "table4", "proxynca-cub200").metrics.items()
    )
    assert all(row.note for row in table.rows if row.quoted)


def test_damlrrms_uncited_triplet_n_pair_rows_are_the_authors_runs_and_say_so(papers):
    for table, dataset in (("table1", "cub200"), ("table2", "cars196"), ("table3", "sop")):
        row = find_row(papers["damlrrm"], table, f"triplet-plus-n-pair-{dataset}")
        assert not row.quoted and "authors' run" in row.note


def test_find_row_names_what_exists(papers):
    with pytest.raises(InputError, match=r"no table 'table99'.*table1"):
        find_row(papers["damlrrm"], "table99", "ours-cub200")
    with pytest.raises(InputError, match=r"table1: no row 'nope'.*ours-cub200"):
        find_row(papers["damlrrm"], "table1", "nope")


def test_module_doctests_pass():
    result = doctest.testmod(published)
    assert result.attempted > 0 and result.failed == 0


# ---- malformed files ----

VALID = {
    "paper": {"key": "damlrrm", "title": "T", "venue": "V", "year": 2019},
    "tables": [
        {
            "id": "table1",
            "caption": "c",
            "kind": "main",
            "rows": [
                {
                    "id": "ours-cub200",
                    "method": "OURS",
                    "proposed": True,
                    "dataset": "cub200",
                    "backbone": "googlenet",
                    "embedding_dim": 512,
                    "setting": None,
                    "metrics": {"NMI": 61.7, "R@1": 55.1},
                    "note": None,
                }
            ],
        }
    ],
}


def _write(tmp_path: Path, document, folder: str = "damlrrm") -> Path:
    path = tmp_path / folder / "published.yaml"
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(document if isinstance(document, str) else yaml.safe_dump(document), encoding="utf-8")
    return path


def _row(document):
    return document["tables"][0]["rows"][0]


def test_a_valid_minimal_file_loads(tmp_path):
    paper = load_published(_write(tmp_path, VALID))
    assert find_row(paper, "table1", "ours-cub200").metrics == {"NMI": 61.7, "R@1": 55.1}
    assert load_published("damlrrm", papers_dir=tmp_path).paper.title == "T"


@pytest.mark.parametrize(
    ("mutate", "expected"),
    [
        (
            lambda d: _row(d).update(dataset="cub"),
            r"table table1 \(tables\[0\]\), row ours-cub200 \(rows\[0\]\), field dataset.*'cub'",
        ),
        (lambda d: _row(d).update(dataset="uci:Iris"), r"rows\[0\]\).*field dataset"),
        (lambda d: _row(d)["metrics"].update({"Recall@1": 55.1}), r"rows\[0\]\).*field metrics.*'Recall@1'"),
        (lambda d: _row(d)["metrics"].update({"R@0": 1.0}), r"field metrics.*'R@0'"),
        (lambda d: _row(d)["metrics"].update({"R@1": "55.1"}), r"field metrics\.R@1.*valid number"),
        (lambda d: _row(d)["metrics"].update({"R@1": True}), r"field metrics\.R@1.*valid number"),
        (lambda d: _row(d)["metrics"].update({"NMI": 0.617e3}), r"field metrics.*percent"),
        (lambda d: _row(d).update(metrics={}), r"rows\[0\]\).*field metrics.*at least one metric"),
        (lambda d: _row(d).update(backbone="vgg16"), r"rows\[0\]\).*field backbone"),
        (lambda d: _row(d).update(id="Ours CUB"), r"rows\[0\]\).*field id.*slug"),
        (lambda d: _row(d).update(colour="red"), r"rows\[0\]\).*field colour.*[Ee]xtra"),
        (lambda d: _row(d).pop("proposed"), r"rows\[0\]\).*field proposed.*required"),
        (lambda d: _row(d).update(quoted=True), r"rows\[0\]\).*both proposed .* and quoted"),
        (lambda d: d["tables"][0].update(id="tableIV"), r"table tableIV.*field id.*table<N>"),
        (lambda d: d["tables"][0].update(kind="results"), r"table table1.*field kind"),
        (lambda d: d["tables"][0].update(rows=[]), r"table table1.*no rows needs a note"),
        (
            lambda d: d["tables"][0]["rows"].append(copy.deepcopy(_row(d))),
            r"table table1.*'ours-cub200'.*unique",
        ),
        (lambda d: d["tables"].append(copy.deepcopy(d["tables"][0])), r"table ids must be unique.*table1"),
        (lambda d: d["paper"].update(key="xyz"), r"field paper\.key"),
        (lambda d: d["paper"].update(key="anml"), r"paper\.key: expected the folder name 'damlrrm'"),
    ],
    ids=[
        "unknown-dataset",
        "uci-name-not-lowercase",
        "unknown-metric",
        "recall-at-zero",
        "quoted-number",
        "bool-value",
        "fraction-not-percent",
        "no-metrics",
        "unknown-backbone",
        "row-id-not-slug",
        "extra-field",
        "missing-field",
        "own-row-quoted",
        "roman-table-id",
        "unknown-kind",
        "empty-table-without-note",
        "duplicate-row-id",
        "duplicate-table-id",
        "unknown-paper-key",
        "key-not-folder-name",
    ],
)
def test_malformed_files_name_file_table_row_and_field(tmp_path, mutate, expected):
    document = copy.deepcopy(VALID)
    mutate(document)
    path = _write(tmp_path, document)
    with pytest.raises(InputError, match=expected) as caught:
        load_published(path)
    assert str(caught.value).startswith(str(path))


def test_unreadable_files_are_input_errors(tmp_path):
    with pytest.raises(InputError, match="not valid YAML"):
        load_published(_write(tmp_path, "tables: [unclosed"))
    with pytest.raises(InputError, match="expected a mapping"):
        load_published(_write(tmp_path, "- just a list"))
    with pytest.raises(InputError, match="not found"):
        load_published(tmp_path / "nowhere" / "published.yaml")
    with pytest.raises(InputError, match="not found"):
        load_published("damlrrm", papers_dir=tmp_path / "empty")
