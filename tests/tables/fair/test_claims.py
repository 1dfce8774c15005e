"""papers/fair/claims.yaml (``dml_core.tables.fair.claims``): every row it names is in its paper's published.yaml on
the entry's dataset, every paper method has an entry on every dataset of the study, and the printed gain is the one
the published rows give, over that same baseline and no other."""

import shutil

import pytest
import yaml

from dml_core.errors import InputError
from dml_core.output_paths import RECIPES_DIR
from dml_core.published import PAPERS_DIR, find_row, load_published
from dml_core.recipes.catalog import load_paper
from dml_core.recipes.study import load_study
from dml_core.tables.fair.claims import fair_claims_path, load_fair_claims
from dml_core.vocabulary import FAIR_DATASETS, FAIR_KEY, PAPER_KEYS


def test_every_row_named_resolves_in_published_yaml_on_its_dataset():
    claims = load_fair_claims()  # raises on any row, table or metric that is not published
    for entry in claims.claims:
        if entry.none is None:
            paper = load_published(entry.method)
            rows = [entry.row, *entry.baselines.values()]
            assert {find_row(paper, entry.table, row).dataset for row in rows} == {entry.dataset}


def test_every_paper_method_of_the_study_has_an_entry_on_every_dataset():
    claims = load_fair_claims()
    assert sorted((e.method, e.dataset) for e in claims.claims) == sorted(
        (method, dataset) for method in load_study(RECIPES_DIR, FAIR_KEY).methods.papers for dataset in FAIR_DATASETS
    )


def test_an_entry_of_a_method_or_baseline_outside_the_study_is_an_error_naming_it(tmp_path):
    claims = yaml.safe_load(fair_claims_path().read_text())
    papers = _papers_copy(tmp_path, claims)
    study = load_study(RECIPES_DIR, FAIR_KEY)
    without = study.model_copy(update={"methods": study.methods.model_copy(update={"baselines": ["npair"]})})
    with pytest.raises(InputError) as error:
        load_fair_claims(papers, without)
    assert str(error.value).startswith(f"{fair_claims_path(papers)}: claims[0] (damlrrm on cub200): field baselines.")
    assert "expected a classic baseline of the study (npair), found " in str(error.value)
    others = study.model_copy(update={"methods": study.methods.model_copy(update={"papers": ["anml"]})})
    with pytest.raises(InputError, match=r"claims\[0\] \(damlrrm on cub200\): field method: expected a paper method"):
        load_fair_claims(papers, others)


def test_the_gain_is_the_published_difference_over_that_same_baseline():
    claims = load_fair_claims()
    printed = claims.entry("drml", "cars196").gain_over("proxy-anchor", load_published("drml"))
    assert (round(printed.value, 1), printed.printed_method, printed.quoted) == (2.5, "ProxyAnchor*", False)
    # damlrrm's Table 1 prints N-pair, not multi-similarity: a gain over the one, never shown as over the other
    damlrrm = claims.entry("damlrrm", "cub200")
    assert round(damlrrm.gain_over("npair", load_published("damlrrm")).value, 1) == 3.2
    assert damlrrm.gain_over("multi-similarity", load_published("damlrrm")) is None
    assert claims.entry("anml", "cars196").gain_over("npair", load_published("anml")) is None  # none printed


def _papers_copy(tmp_path, claims: dict):
    for key in PAPER_KEYS:
        (tmp_path / key).mkdir()
        shutil.copy(PAPERS_DIR / key / "published.yaml", tmp_path / key / "published.yaml")
    (tmp_path / FAIR_KEY).mkdir()
    fair_claims_path(tmp_path).write_text(yaml.safe_dump(claims, sort_keys=False))
    return tmp_path


def test_a_row_that_is_not_published_is_an_error_naming_the_file_entry_and_field(tmp_path):
    claims = yaml.safe_load(fair_claims_path().read_text())
    claims["claims"][0]["baselines"]["npair"] = "n-pairs-cub200"
    papers = _papers_copy(tmp_path, claims)
    with pytest.raises(InputError) as error:
        load_fair_claims(papers)
    assert str(error.value).startswith(
        f"{fair_claims_path(papers)}: claims[0] (damlrrm on cub200): field baselines.npair: paper damlrrm table1: "
        "no row 'n-pairs-cub200'"
    )


def test_a_row_of_another_dataset_and_an_entry_with_both_a_pair_and_a_reason_are_errors(tmp_path):
    claims = yaml.safe_load(fair_claims_path().read_text())
    claims["claims"][0]["row"] = "ours-alpha-30-cub200"  # a CUB row, but of Table 4, not Table 1
    papers = _papers_copy(tmp_path, claims)
    with pytest.raises(InputError, match=r"field row: paper damlrrm table1: no row 'ours-alpha-30-cub200'"):
        load_fair_claims(papers)
    claims["claims"][0]["row"] = "ours-cars196"
    claims["claims"][0]["table"] = "table2"
    claims["claims"][0]["baselines"] = {"npair": "n-pair-cars196"}
    fair_claims_path(papers).write_text(yaml.safe_dump(claims, sort_keys=False))
    with pytest.raises(InputError, match=r"field row: row ours-cars196 is on cars196, expected cub200"):
        load_fair_claims(papers)
    claims["claims"][0]["none"] = "not printed"
    fair_claims_path(papers).write_text(yaml.safe_dump(claims, sort_keys=False))
    with pytest.raises(InputError, match=r"none: given with table, row or baselines"):
        load_fair_claims(papers)


FAIR_RUN_IDS = {run.id for run in load_paper(FAIR_KEY).runs}


@pytest.mark.parametrize(
    "claim",
    [c for c in load_fair_claims().claims if c.row is not None and f"{c.method}-{c.dataset}" in FAIR_RUN_IDS],
    ids=lambda c: f"{c.method}-{c.dataset}",
)
def test_a_claims_row_is_what_a_paper_recipe_of_the_fair_runs_loss_reproduces(claim):
    """The printed gain stands beside the fair run only if its row is the variant the fair run trains: some recipe
    of the paper targets that row with the fair run's loss. (SOP has no fair run: its claims are never shown.)"""
    fair_id = f"{claim.method}-{claim.dataset}"
    fair_loss = load_paper(FAIR_KEY).run(fair_id).recipe().loss
    targeting = [
        recipe
        for run in load_paper(claim.method).runs
        for recipe in [run.recipe()]
        if any(target.table == claim.table and target.row == claim.row for target in recipe.targets)
    ]
    assert targeting, f"no recipe of {claim.method} targets {claim.table}/{claim.row}"
    assert any(recipe.loss == fair_loss for recipe in targeting), (
        f"{claim.table}/{claim.row}: its recipes ({', '.join(r.id for r in targeting)}) train another loss than "
        f"fair's {fair_id}"
    )
