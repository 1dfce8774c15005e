"""One tier per run: the value the flags choose, the folders it writes, and results files that record it, new
(``tier``) and old (the ``smoke`` / ``mini`` booleans, as every committed results file has them)."""

import json
from pathlib import Path

import pytest

from dml_core.errors import InputError
from dml_core.output_paths import REPOSITORY_ROOT, results_file
from dml_core.results import ResultsFile, deep_results_payload, load_results, write_results
from dml_core.tier import Tier
from tests.test_results import _payload


def test_the_flags_choose_one_tier_and_its_folder():
    assert [Tier.from_flags(), Tier.from_flags(smoke_flag=True), Tier.from_flags(mini_flag=True)] == [
        "full",
        "smoke",
        "mini",
    ]
    with pytest.raises(ValueError, match="one tier"):
        Tier.from_flags(smoke_flag=True, mini_flag=True)
    paths = {tier: results_file(Path("r"), "anml", "x", 0, tier).as_posix() for tier in Tier}
    assert paths == {
        "full": "r/anml/x-seed0.json",
        "smoke": "r/smoke/anml/x-seed0.json",
        "mini": "r/mini/anml/x-seed0.json",
    }


@pytest.mark.parametrize(
    ("booleans", "tier"),
    [({"smoke": True}, Tier.SMOKE), ({"smoke": False, "mini": True}, Tier.MINI), ({"smoke": False}, Tier.FULL)],
)
def test_an_old_results_file_with_the_two_booleans_loads_as_its_tier(tmp_path, booleans, tier):
    payload = {key: value for key, value in _payload().items() if key != "smoke"}
    path = tmp_path / "old.json"
    path.write_text(json.dumps({**payload, **booleans}))
    results = load_results(path)
    assert results.tier == tier and results.smoke == (tier == Tier.SMOKE) and results.mini == (tier == Tier.MINI)


def test_a_file_claiming_two_tiers_is_refused_naming_the_field(tmp_path):
    path = tmp_path / "both.json"
    path.write_text(json.dumps({**_payload(), "smoke": True, "mini": True}))
    with pytest.raises(InputError, match="smoke and mini: a run belongs to one tier"):
        load_results(path)
    path.write_text(json.dumps({**_payload(), "tier": "smoke"}))  # the new field beside an old one
    with pytest.raises(InputError, match="tier: given with the older smoke/mini fields"):
        load_results(path)


def test_a_new_results_file_records_the_tier_and_reads_back(tmp_path):
    payload = {key: value for key, value in _payload().items() if key != "smoke"}
    path = write_results(tmp_path / "new.json", {**payload, "tier": "mini"})
    assert json.loads(path.read_text())["tier"] == "mini" and "smoke" not in json.loads(path.read_text())
    assert load_results(path).tier == Tier.MINI
    assert "tier" in deep_results_payload.__code__.co_varnames  # the trainer's payload takes the tier, no booleans


def test_every_committed_results_file_still_loads():
    committed = sorted((REPOSITORY_ROOT / "results").rglob("*.json"))
    assert committed, "the repository commits results files"
    for path in committed:
        results = load_results(path)
        assert results.tier in Tier and (not isinstance(results, ResultsFile) or results.recipe.sha256)
