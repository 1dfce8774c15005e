"""The papers' claims (``papers/<key>/claims.yaml``) evaluated on the reproduced numbers of the long form.

Each side of a comparison takes the reproduced mean of its row (the paper's default reading; of the recipe named
after the row when several target it), or the published number when no run of ours targets that row (a method
the authors quoted, or one we do not rerun): then the claim asks whether our run beats the paper's number for
it. A row a run targets but that has no results yet makes the comparison "not run", as does a comparison with
no reproduced side at all.

A comparison of two reproduced numbers is "within noise" when its margin over the claimed difference is no
larger than the noise of that difference: the measured spreads of its sides (``dml_core.tables.gate.noise``) added in
quadrature, a side without a measured spread counting with its metric's tolerance (the documented run-to-run
spread), a published side with none.
"""

from __future__ import annotations

import math
from collections import Counter
from dataclasses import dataclass

import pandas as pd

from dml_core.published import PublishedPaper, find_row
from dml_core.tables.gate.noise import difference_noise
from dml_core.tables.gate.tolerances import Tolerances
from dml_core.tables.pages.claims import Claim, Pair, PaperClaims
from dml_core.tier import Tier

HOLDS, FAILS, WITHIN_NOISE, NOT_RUN, SMOKE = "holds", "fails", "within noise", "not run", "n/a (smoke)"
VERDICTS = (HOLDS, FAILS, WITHIN_NOISE, NOT_RUN)
PLURAL = {HOLDS: "hold", FAILS: "fail"}  # "2 hold, 1 fails"


@dataclass(frozen=True)
class Side:
    """One side of a comparison: its value and noise, and whether it is ours (reproduced) or the paper's."""

    value: float
    noise: float
    reproduced: bool


@dataclass(frozen=True)
class PairVerdict:
    pair: Pair
    verdict: str
    better: Side | None
    worse: Side | None

    @property
    def difference(self) -> float:
        return self.better.value - self.worse.value if self.better and self.worse else math.nan


@dataclass(frozen=True)
class ClaimVerdict:
    claim: Claim
    verdict: str
    comparisons: tuple[str, ...]  # one verdict per comparison
    pairs: tuple[PairVerdict, ...]

    @property
    def detail(self) -> str:
        """What decided the verdict, in a few words (the numbers when the claim is one pair)."""
        if self.verdict == SMOKE:
            return "smoke numbers are not compared"
        if len(self.pairs) == 1 and self.pairs[0].verdict != NOT_RUN:
            return describe_pair(self.pairs[0])
        counts = Counter(self.comparisons)
        total = len(self.comparisons)
        parts = [f"{counts[v]} {PLURAL.get(v, v) if counts[v] > 1 else v}" for v in VERDICTS if counts[v]]
        needed = "" if self.claim.required == total else f"; {self.claim.required} needed"
        return f"{total} comparison{'s' if total > 1 else ''}: " + ", ".join(parts) + needed


def describe_pair(verdict: PairVerdict) -> str:
    """``ours-cub200 53.2 vs n-pair-cub200 51.9 (published): +1.3, needs > 0, noise 1.5``.

    >>> pair = Pair("table1", "a", "b", "R@1", 1.0)
    >>> describe_pair(PairVerdict(pair, HOLDS, Side(55.0, 1.5, True), Side(52.0, 0.0, False)))
    'a 55.0 vs b 52.0 (published) on R@1: +3.0, needs ≥ +1.0, noise 1.5'
    """
    pair, better, worse = verdict.pair, verdict.better, verdict.worse
    assert better is not None and worse is not None
    label = lambda row, side: f"{row} {side.value:.1f}{'' if side.reproduced else ' (published)'}"  # noqa: E731
    need = f"≥ {pair.by:+.1f}" if pair.by is not None else "> 0"
    noise = difference_noise(better.noise, worse.noise)
    return (
        f"{label(pair.better, better)} vs {label(pair.worse, worse)} on {pair.metric}: "
        f"{verdict.difference:+.1f}, needs {need}" + (f", noise {noise:.1f}" if noise > 0 else "")
    )


def _reproduced_lines(frame: pd.DataFrame) -> dict[tuple[str, str, str], pd.Series]:
    """``(table, row, metric) -> the line`` a claim reads for that cell (default reading, the recipe named after
    the row first); rows that runs target but that have no number map to None."""
    lines: dict[tuple[str, str, str], pd.Series] = {}
    default = frame[frame["variant"].fillna("") == ""]
    ranked = default.assign(_rank=(default["recipe"] != default["row"]).astype(int)).sort_values("_rank", kind="stable")
    for _, line in ranked.iterrows():
        key = (line["table"], line["row"], line["metric"])
        if key not in lines or (math.isnan(lines[key]["reproduced"]) and not math.isnan(line["reproduced"])):
            lines[key] = line
    return lines


def _side(
    paper: PublishedPaper,
    lines: dict[tuple[str, str, str], pd.Series],
    targeted: set[tuple[str, str]],
    table: str,
    row: str,
    metric: str,
    tolerances: Tolerances,
) -> Side | None:
    line = lines.get((table, row, metric))
    if line is not None and not math.isnan(line["reproduced"]):
        noise = line["spread"] if not math.isnan(line["spread"]) else tolerances.for_metric(metric)
        return Side(float(line["reproduced"]), float(noise), True)
    if (table, row) in targeted:
        return None  # a run targets it: wait for its number
    return Side(find_row(paper, table, row).metrics[metric], 0.0, False)


def judge_pair(pair: Pair, better: Side | None, worse: Side | None) -> str:
    """The verdict of one pair given its two sides (None: a targeted row without a number).

    >>> pair = Pair("t", "a", "b", "R@1", None)
    >>> [judge_pair(pair, Side(b, 1.0, True), Side(50.0, 0.0, False)) for b in (52.0, 50.5, 48.0)]
    ['holds', 'within noise', 'fails']
    >>> judge_pair(pair, None, Side(50.0, 0.0, False)), judge_pair(pair, Side(52.0, 0, False), Side(50.0, 0, False))
    ('not run', 'not run')
    """
    if better is None or worse is None or not (better.reproduced or worse.reproduced):
        return NOT_RUN
    difference = better.value - worse.value
    margin = round(difference - (pair.by or 0.0), 9)
    noise = difference_noise(better.noise, worse.noise)
    if noise > 0 and abs(margin) <= noise:
        return WITHIN_NOISE
    return HOLDS if pair.holds(difference) else FAILS


def combine(verdicts: list[str], required: int) -> str:
    """A claim's verdict from its comparisons' verdicts, ``required`` of which must hold.

    >>> combine([HOLDS, HOLDS], 2), combine([HOLDS, FAILS], 2), combine([HOLDS, WITHIN_NOISE], 2)
    ('holds', 'fails', 'within noise')
    >>> combine([HOLDS, NOT_RUN], 2), combine([HOLDS, NOT_RUN, FAILS], 1), combine([FAILS, NOT_RUN], 2)
    ('not run', 'holds', 'fails')
    """
    counts = Counter(verdicts)
    if counts[HOLDS] >= required:
        return HOLDS
    if counts[HOLDS] + counts[WITHIN_NOISE] + counts[NOT_RUN] < required:
        return FAILS
    if counts[HOLDS] + counts[WITHIN_NOISE] >= required:
        return WITHIN_NOISE
    return NOT_RUN


def _comparison_verdict(pair_verdicts: list[str]) -> str:
    for verdict in (FAILS, NOT_RUN, WITHIN_NOISE):
        if verdict in pair_verdicts:
            return verdict
    return HOLDS


def evaluate_claims(
    claims: PaperClaims, paper: PublishedPaper, frame: pd.DataFrame, tolerances: Tolerances, tier: Tier
) -> list[ClaimVerdict]:
    """Every claim of the paper judged on the long form ``frame`` (smoke numbers are never judged)."""
    lines = _reproduced_lines(frame)
    targeted = set(zip(frame["table"], frame["row"], strict=True))
    verdicts = []
    for claim in claims.claims:
        comparisons, pairs = [], []
        for index in range(len(claim.comparisons)):
            judged = []
            for pair in claim.pairs(index):
                better = _side(paper, lines, targeted, pair.table, pair.better, pair.metric, tolerances)
                worse = _side(paper, lines, targeted, pair.table, pair.worse, pair.metric, tolerances)
                judged.append(
                    PairVerdict(pair, SMOKE if tier == Tier.SMOKE else judge_pair(pair, better, worse), better, worse)
                )
            pairs += judged
            comparisons.append(SMOKE if tier == Tier.SMOKE else _comparison_verdict([p.verdict for p in judged]))
        verdict = SMOKE if tier == Tier.SMOKE else combine(comparisons, claim.required)
        verdicts.append(ClaimVerdict(claim, verdict, tuple(comparisons), tuple(pairs)))
    return verdicts
