"""The papers' claims: every file loads, every claim holds on the published numbers (so the encoding is right),
and malformed files fail naming the file, the claim and the field."""

from __future__ import annotations

import copy

import pytest
import yaml

from dml_core.errors import InputError
from dml_core.published import load_published
from dml_core.tables.pages.claims import Pair, holds_on_published, load_claims, published_difference
from dml_core.vocabulary import PAPER_KEYS
from tests.tables.synthetic import PAPER_KEY, write_papers_dir


@pytest.mark.parametrize("key", PAPER_KEYS)
def test_every_claim_holds_on_the_published_numbers(key):
    paper = load_published(key)
    claims = load_claims(key)
    assert claims.claims, key
    for claim in claims.claims:
        assert holds_on_published(claim, paper), f"{key} {claim.id}"
        assert claim.quote.strip() and claim.section.strip()


@pytest.mark.parametrize(
    ("key", "claim_id", "held", "of"),
    [
        ("damlrrm", "ours-best-in-most-cells", 15, 17),  # not best on SOP NMI and F1 (AML)
        ("anml", "lanml-minus-beats-lmnn", 14, 15),  # not on Letter
        ("anml", "pnca-beats-nca-on-most", 15, 15),
        ("drml", "drml-improves-each-method-cub-cars", 6, 6),
    ],
)
def test_quantified_claims_count_as_the_tables_show(key, claim_id, held, of):
    paper = load_published(key)
    [claim] = [c for c in load_claims(key).claims if c.id == claim_id]
    counted = sum(
        all(pair.holds(published_difference(paper, pair)) for pair in claim.pairs(i))
        for i in range(len(claim.comparisons))
    )
    assert (counted, len(claim.comparisons)) == (held, of)


def test_the_stated_margins_are_the_tables_differences():
    paper = load_published("anml")
    [claim] = [c for c in load_claims("anml").claims if c.id == "neighborhood-parameters-improve-baselines"]
    margins = [pair.by for i in range(3) for pair in claim.pairs(i)]
    differences = [round(published_difference(paper, pair), 6) for i in range(3) for pair in claim.pairs(i)]
    assert margins == differences == [1.7, 3.5, 3.2]


def test_a_claim_that_the_numbers_contradict_does_not_hold():
    paper = load_published("drml")
    # DRML-TSH is below Triplet-SH* at SOP R@1 in the paper's own Table 6 (75.7 vs 76.1).
    assert not Pair("table6", "drml-tsh-sop", "triplet-sh-sop", "R@1", None).holds(
        published_difference(paper, Pair("table6", "drml-tsh-sop", "triplet-sh-sop", "R@1", None))
    )


VALID = {
    "paper": PAPER_KEY,
    "claims": [{"id": "ours-beats-lifted", "section": "4", "quote": "q", "table": "table1",
                "comparisons": [{"better": "ours-cub200", "worse": "lifted-cub200", "metrics": "R@1"}]}],
}  # fmt: skip


def _write(tmp_path, document):
    papers = write_papers_dir(tmp_path)
    (papers / PAPER_KEY / "claims.yaml").write_text(yaml.safe_dump(document))
    return papers


def test_a_valid_file_loads_and_one_row_or_metric_may_be_a_plain_string(tmp_path):
    claims = load_claims(PAPER_KEY, _write(tmp_path, VALID))
    [pair] = claims.claims[0].pairs(0)
    assert pair == Pair("table1", "ours-cub200", "lifted-cub200", "R@1", None)


@pytest.mark.parametrize(
    ("change", "message"),
    [
        (
            lambda d: d["claims"][0]["comparisons"][0].update(worse="nope"),
            r"claim ours-beats-lifted, comparisons\[0\]: .*no row 'nope'",
        ),
        (lambda d: d["claims"][0]["comparisons"][0].update(metrics="R@2"), r"lifted-cub200: no published R@2"),
        (lambda d: d["claims"][0].pop("table"), r"claim ours-beats-lifted \(claims\[0\]\): comparisons\[0\]: no table"),
        (lambda d: d["claims"][0].update(at_least=2), r"at_least: 2 is more than the 1 comparisons"),
        (lambda d: d["claims"][0].update(quote=""), r"claim ours-beats-lifted \(claims\[0\]\), field quote"),
        (lambda d: d["claims"][0]["comparisons"][0].update(by=-1), r"field comparisons.0.by"),
        (lambda d: d["claims"].append(copy.deepcopy(d["claims"][0])), r"claim ids must be unique"),
        (lambda d: d.update(paper="gpw"), r"field paper: expected 'damlrrm'"),
        (lambda d: d["claims"][0].update(extra=1), r"field extra: Extra inputs are not permitted"),
    ],
)
def test_malformed_files_name_the_claim_and_field(tmp_path, change, message):
    document = copy.deepcopy(VALID)
    change(document)
    with pytest.raises(InputError, match=message):
        load_claims(PAPER_KEY, _write(tmp_path, document))


def test_a_missing_file_is_named(tmp_path):
    with pytest.raises(InputError, match=r"claims\.yaml: claims file not found"):
        load_claims(PAPER_KEY, write_papers_dir(tmp_path))
