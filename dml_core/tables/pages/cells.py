"""One table cell: the published number as printed, and beside it what we reproduced, the gap and a status
marker, e.g. ``55.1 → 53.2 ± 0.8 (−1.9) ✓`` (mean ± std over seeds) or ``55.1 → 53.2 [52.4, 54.0] (−1.9) ✓``
(one seed and its 95% bootstrap interval over the test queries)."""

from __future__ import annotations

import math

from dml_core.tables.gate.join import ABOVE, BELOW, NOT_EVALUATED, NOT_RUN, SMOKE, WAIVED, WITHIN

MARKERS = {WITHIN: "✓", BELOW: "▼", ABOVE: "▲", WAIVED: "▼ waived"}
LEGEND = (
    "Cells: published → reproduced (gap) marker; ✓ within the gate, ▼ below, ▲ above it; ▼ waived: below, but the "
    "published number is under a reviewed waiver (papers/<key>/known_gaps.yaml), so the gate does not count it. "
    "The gate is the metric's tolerance, or the measured spread of the line where that is larger. Reproduced "
    "numbers are the mean over seeds (± sample std, with the seed count in the runs column), or over splits for the "
    "linear Table 2 protocol "
    "(± std over splits, as the paper prints it). A deep run's number is the evaluation its reading `selection` "
    "picks: by default the one with the best test R@1 (the papers' likely practice; none states it); '· final' gives "
    "the reading's other value, the last evaluation's, where it differs. A single seed's number shows its 95% "
    "bootstrap interval over the test queries, [low, high] (retrieval metrics; 1,000 resamples, seeded)."
)
MISSING = "—"


def decimals(value: float) -> int:
    """The decimals the paper printed (at least one).

    >>> decimals(55.1), decimals(95.76), decimals(67.0), decimals(90.0)
    (1, 2, 1, 1)
    """
    text = repr(float(value))
    return max(1, len(text.split(".")[1])) if "." in text and "e" not in text else 1


def signed(value: float, places: int) -> str:
    """A gap with a true minus sign.

    >>> signed(-1.94, 2), signed(0.18, 1), signed(0.0, 1)
    ('−1.94', '+0.2', '+0.0')
    """
    text = f"{value:+.{places}f}"
    return text.replace("-", "−")


def published_text(value: float, std: float = math.nan) -> str:
    """As printed (``67.0``, not ``67``), with the published ± when the paper prints one.

    >>> published_text(99.89, 2.09), published_text(67.0), published_text(float("nan"))
    ('99.89 ± 2.09', '67.0', '—')
    """
    if math.isnan(value):
        return MISSING
    return str(float(value)) if math.isnan(std) else f"{float(value)} ± {float(std)}"


def reproduced_text(reproduced: float, places: int, plus_minus: float, interval: tuple[float, float]) -> str:
    """Our number with its spread: the bootstrap ``interval`` (low, high) where there is one, else ``± plus_minus``.

    >>> nan = float("nan")
    >>> reproduced_text(53.21, 1, 0.8, (nan, nan)), reproduced_text(53.21, 1, 0.8, (52.43, 54.04))
    ('53.2 ± 0.8', '53.2 [52.4, 54.0]')
    >>> reproduced_text(53.21, 1, nan, (nan, nan))
    '53.2'
    """
    ours = f"{reproduced:.{places}f}"
    low, high = interval
    if not (math.isnan(low) or math.isnan(high)):
        return f"{ours} [{low:.{places}f}, {high:.{places}f}]"
    return ours + ("" if math.isnan(plus_minus) else f" ± {plus_minus:.{places}f}")


def reproduced_cell(
    published: float,
    published_std: float,
    status: str,
    reproduced: float,
    plus_minus: float,
    final: float = math.nan,
    interval: tuple[float, float] = (math.nan, math.nan),
) -> str:
    """The cell of a published number a run targets: the papers' pick (the best test R@1 evaluation) compared,
    and the number at the last evaluation after it where it differs (``final``).

    >>> reproduced_cell(55.1, float("nan"), "below", 53.2, 0.8)
    '55.1 → 53.2 ± 0.8 (−1.9) ▼'
    >>> reproduced_cell(95.76, 1.89, "above", 98.0, 2.57)
    '95.76 ± 1.89 → 98.00 ± 2.57 (+2.24) ▲'
    >>> reproduced_cell(55.1, float("nan"), "below", 53.2, float("nan"), final=52.74)
    '55.1 → 53.2 (−1.9) ▼ · final 52.7'
    >>> reproduced_cell(55.1, float("nan"), "within tolerance", 54.3, 0.6, interval=(53.7, 54.9))
    '55.1 → 54.3 [53.7, 54.9] (−0.8) ✓'
    >>> nan = float("nan")
    >>> reproduced_cell(55.1, nan, "n/a (smoke)", 2.08, 0.06), reproduced_cell(55.1, nan, "not run", nan, nan)
    ('55.1 → 2.1 ± 0.1 (smoke)', '55.1')
    """
    shown = published_text(published, published_std)
    if status == NOT_RUN or math.isnan(published):
        return shown
    if status == NOT_EVALUATED:
        return f"{shown} → not evaluated"
    places = decimals(published)
    ours = reproduced_text(reproduced, places, plus_minus, interval)
    if status == SMOKE:
        return f"{shown} → {ours} (smoke)"
    last = (
        "" if math.isnan(final) or round(final, places) == round(reproduced, places) else f" · final {final:.{places}f}"
    )
    return f"{shown} → {ours} ({signed(reproduced - published, places)}) {MARKERS[status]}{last}"


def runs_text(unit: str, samples: int, seeds: str) -> str:
    """How many runs a reproduced number pools.

    >>> runs_text("seed", 3, "0,1,2"), runs_text("seed", 1, "0")
    ('3 seeds', '1 seed')
    >>> runs_text("split", 30, "0"), runs_text("split", 60, "0,1")
    ('30 splits', '60 splits (2 seeds)')
    """
    if unit == "split":
        count = len(seeds.split(",")) if seeds else 0
        return f"{samples} splits" + (f" ({count} seeds)" if count > 1 else "")
    return f"{samples} seed{'s' if samples != 1 else ''}"
