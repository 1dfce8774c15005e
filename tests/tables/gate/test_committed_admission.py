"""The results gate admits and refuses every committed results file as the committed listing says, with the same
line for each refusal (``committed_admission``: the gate over each paper's folder, and the pinned recipe of each
deep file, at the full and smoke tiers)."""

import json

from tests.tables.gate.committed_admission import COMMITTED, committed_admission


def test_the_gate_admits_and_refuses_every_committed_results_file_as_committed():
    expected = json.loads(COMMITTED.read_text(encoding="utf-8"))
    actual = committed_admission()
    assert sorted(actual) == sorted(expected), (
        "results files added or removed: python -m tests.tables.gate.committed_admission --write"
    )
    changed = {name: (expected[name], actual[name]) for name in expected if actual[name] != expected[name]}
    assert not changed, f"{len(changed)} verdicts changed (committed, now), e.g. {list(changed.items())[:3]}"
