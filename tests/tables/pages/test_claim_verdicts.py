"""Claims judged on reproduced numbers: holds, fails, within noise (hand-computed noise), not run; a row no run
of ours targets counts with its published number; smoke numbers are never judged."""

import math

import pytest
import yaml

from dml_core.published import load_published
from dml_core.tables.gate.join import join, load_results_folder
from dml_core.tables.gate.tolerances import Tolerances
from dml_core.tables.pages.claim_verdicts import evaluate_claims
from dml_core.tables.pages.claims import load_claims
from dml_core.tier import Tier
from tests.tables.synthetic import PAPER_KEY, results_payload, write_papers_dir, write_results_file

TOLERANCES = Tolerances(default=1.5)
CLAIMS = {
    "paper": PAPER_KEY,
    "claims": [
        {"id": "ours-beats-lifted", "section": "4", "quote": "OURS beats Lifted by 3.3.", "table": "table1",
         "comparisons": [{"better": "ours-cub200", "worse": "lifted-cub200", "metrics": "R@1", "by": 3.3}]},
        {"id": "ours-beats-lifted-on-most", "section": "4", "quote": "On most metrics.", "table": "table1",
         "at_least": 1, "comparisons": [{"better": "ours-cub200", "worse": "lifted-cub200", "metrics": "R@1"},
                                        {"better": "ours-cub200", "worse": "lifted-cub200", "metrics": "NMI"}]},
    ],
}  # fmt: skip


@pytest.fixture
def setting(tmp_path):
    papers = write_papers_dir(tmp_path)
    (papers / PAPER_KEY / "claims.yaml").write_text(yaml.safe_dump(CLAIMS))
    return load_published(PAPER_KEY, papers), load_claims(PAPER_KEY, papers)


def _verdicts(tmp_path, setting, ours, lifted=None, planned=None, smoke=False):
    paper, claims = setting
    for seed, (r1, nmi) in enumerate(ours):
        write_results_file(tmp_path, results_payload(seed=seed, smoke=smoke, curve=[{"R@1": r1, "NMI": nmi}]))
    for seed, (r1, nmi) in enumerate(lifted or []):
        target = [{"table": "table1", "row": "lifted-cub200"}]
        curve = [{"R@1": r1, "NMI": nmi}]
        write_results_file(
            tmp_path, results_payload("lifted-cub200", seed=seed, smoke=smoke, targets=target, curve=curve)
        )
    folder = tmp_path / ("smoke" if smoke else "") / PAPER_KEY
    frame = join(
        paper, load_results_folder(folder, Tier.from_flags(smoke)), TOLERANCES, planned, tier=Tier.from_flags(smoke)
    )
    return {v.claim.id: v for v in evaluate_claims(claims, paper, frame, TOLERANCES, Tier.from_flags(smoke))}


def test_a_claim_against_a_row_we_do_not_run_reads_its_published_number(tmp_path, setting):
    verdicts = _verdicts(tmp_path, setting, ours=[(53.0, 60.0), (54.0, 60.0), (55.0, 60.0)])
    verdict = verdicts["ours-beats-lifted"]
    assert verdict.verdict == "holds"  # 54.0 - 43.6 = 10.4 >= 3.3, well beyond the std of 1.0
    assert verdict.detail == "ours-cub200 54.0 vs lifted-cub200 43.6 (published) on R@1: +10.4, needs ≥ +3.3, noise 1.0"
    assert verdicts["ours-beats-lifted-on-most"].verdict == "holds"


def test_a_gap_smaller_than_the_noise_is_within_noise(tmp_path, setting):
    # ours: 3 seeds, mean 54.0, std 1.0; lifted: one seed (no measured spread: its tolerance 1.5 counts).
    # difference 1.0 - 3.3 = -2.3; noise sqrt(1.0² + 1.5²) = 1.80 -> fails at "by 3.3" ...
    verdicts = _verdicts(tmp_path, setting, ours=[(53.0, 60.0), (54.0, 60.0), (55.0, 60.0)], lifted=[(53.0, 59.5)])
    assert verdicts["ours-beats-lifted"].verdict == "fails"
    assert math.isclose(math.hypot(1.0, 1.5), 1.8027756377319946)
    # ... while "ours beats lifted" on R@1 (+1.0) and NMI (+0.5) are both within that noise: within noise overall.
    most = verdicts["ours-beats-lifted-on-most"]
    assert most.verdict == "within noise" and most.comparisons == ("within noise", "within noise")
    assert most.detail == "2 comparisons: 2 within noise; 1 needed"


def test_a_targeted_row_without_results_makes_the_comparison_not_run(tmp_path, setting):
    planned = {("table1", "lifted-cub200"): ["lifted-cub200"]}
    verdicts = _verdicts(tmp_path, setting, ours=[(54.0, 60.0)], planned=planned)
    assert {v.verdict for v in verdicts.values()} == {"not run"}
    assert verdicts["ours-beats-lifted"].detail == "1 comparison: 1 not run"


def test_a_clear_shortfall_fails(tmp_path, setting):
    verdicts = _verdicts(tmp_path, setting, ours=[(40.0, 50.0)])  # 40.0 - 43.6 = -3.6, noise 1.5 (tolerance)
    assert verdicts["ours-beats-lifted"].verdict == "fails"
    assert verdicts["ours-beats-lifted-on-most"].verdict == "fails"


def test_smoke_numbers_are_never_judged(tmp_path, setting):
    verdicts = _verdicts(tmp_path, setting, ours=[(2.0, 20.0)], smoke=True)
    assert {v.verdict for v in verdicts.values()} == {"n/a (smoke)"}


@pytest.mark.parametrize("key", ["damlrrm", "anml", "gpw", "drml", "cgml"])
def test_every_papers_claims_are_not_run_before_any_result(key):
    paper = load_published(key)
    verdicts = evaluate_claims(load_claims(key), paper, join(paper, [], TOLERANCES), TOLERANCES, tier=Tier.FULL)
    assert {v.verdict for v in verdicts} == {"not run"}
