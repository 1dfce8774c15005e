"""The summary a reader sees first: per published table, how many of the rows we run are within the gate,
below, above or not run yet (a row is as bad as its worst metric), how many are published only, and the claims'
verdicts. Computed from the long form, so the tables index (``tables/README.md``) needs nothing else."""

from __future__ import annotations

from collections import Counter

import pandas as pd

from dml_core.published import PublishedPaper
from dml_core.tables.gate.join import ABOVE, BELOW, NOT_EVALUATED, NOT_RUN, SMOKE, WAIVED, WITHIN
from dml_core.tables.pages.claim_verdicts import VERDICTS, ClaimVerdict
from dml_core.tier import Tier

# Worst first: a row below on one metric and above on another counts as below.
ROW_STATUSES = (BELOW, ABOVE, WAIVED, NOT_EVALUATED, WITHIN, SMOKE, NOT_RUN)
TIMED = "timed"  # a run of a training-time table: no gate, its numbers are in the page's timing table
COUNT_COLUMNS = {WITHIN: "within", BELOW: "below", ABOVE: "above", WAIVED: "waived", NOT_EVALUATED: "not evaluated",
                 SMOKE: "ran (smoke)", TIMED: "timed", NOT_RUN: "not run"}  # fmt: skip


def row_status(statuses: pd.Series) -> str:
    """The status of one row's run from its metrics' statuses (worst first; not-evaluated metrics of a run
    that measured others do not count).

    >>> row_status(pd.Series(["within tolerance", "below", "above"])), row_status(pd.Series(["not run"] * 2))
    ('below', 'not run')
    >>> row_status(pd.Series(["within tolerance", "not evaluated"]))
    'within tolerance'
    """
    present = set(statuses)
    if present - {NOT_EVALUATED}:
        present.discard(NOT_EVALUATED)
    return next(status for status in ROW_STATUSES if status in present)


def table_counts(paper: PublishedPaper, frame: pd.DataFrame, timing: pd.DataFrame | None = None) -> pd.DataFrame:
    """One line per published table: its id, the number of row runs per status, and its published-only rows
    (``quoted`` of them quoted by the authors from other works). A training-time table counts its runs from
    ``timing`` (``dml_core.tables.pages.timing.timing_frame``): timed, or not run; without it, none."""
    lines = []
    for table in paper.tables:
        mine = frame[frame["table"] == table.id]
        statuses = [row_status(group["status"]) for _, group in mine.groupby(["row", "recipe", "variant"], sort=False)]
        targeted = set(mine["row"])
        if table.kind == "training_time" and timing is not None:
            timed = timing[timing["row"].isin([row.id for row in table.rows])]
            statuses = [NOT_RUN if device == NOT_RUN else TIMED for device in timed["device"]]
            targeted = set(timed["row"])
        counts = Counter(statuses)
        published_only = [row for row in table.rows if row.id not in targeted]
        lines.append(
            {
                "table": table.id,
                **{name: counts[status] for status, name in COUNT_COLUMNS.items()},
                "published only": len(published_only),
                "quoted": sum(row.quoted for row in published_only),
            }
        )
    return pd.DataFrame(lines)


def counts_text(line: pd.Series, tier: Tier) -> str:
    """``2 within · 1 below · 5 not run`` (zero counts left out; "nothing run" when every count is zero)."""
    names = [name for status, name in COUNT_COLUMNS.items() if tier == Tier.SMOKE or status != SMOKE]
    parts = [f"{line[name]} {name}" for name in names if line[name]]
    return " · ".join(parts) or "no run planned"


def verdict_counts(verdicts: list[ClaimVerdict]) -> str:
    """``1 holds · 4 not run`` over a paper's claims.

    >>> verdict_counts([])
    'no claims'
    """
    counts = Counter(v.verdict for v in verdicts)
    parts = [f"{counts[v]} {v}" for v in (*VERDICTS, SMOKE) if counts[v]]
    return " · ".join(parts) or "no claims"
