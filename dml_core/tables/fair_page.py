"""The fair comparison's page, ``tables/[mini/]fair.md``, and its CSV (one line per dataset and method): what
``dml_core.tables.fair`` found, as a reader sees it."""

from __future__ import annotations

import math
from pathlib import Path

import pandas as pd

from dml_core.atomic_io import atomic_write_text
from dml_core.output_paths import recorded_path
from dml_core.tables.cells import MISSING, signed
from dml_core.tables.fair import METRICS, VALIDATION_R1, ClaimCell, DatasetSection, FairTables, MethodLine
from dml_core.tables.fair_verdicts import LEVEL
from dml_core.tables.join import pooled
from dml_core.tables.labels import dataset_name
from dml_core.tables.mini import mean_std
from dml_core.tier import Tier

TITLE = "# The fair comparison: the five methods and five classic baselines under one protocol"
MINI_BANNER = (
    "> **Mini tier: the whole protocol on the `embedded_mini` glyphs, NOT the study's numbers.** Every run trains "
    "from random weights on the generated glyphs with small images, a narrowed backbone and a few hundred steps on "
    "the CPU, so the pipeline (validation split, selection on it, every method and baseline, this table) is "
    "proven before a GPU is spent. A verdict here says nothing about which method wins at full scale."
)
HOW_TO_READ = (
    "**How to read it.** Each number is a test metric (%) of the evaluation that validation R@1 picked "
    "(`best_val_r1`: the validation split is carved from the training classes; the test classes never choose a "
    "checkpoint), as mean ± sample standard deviation over the seeds listed (one seed: the value alone). The best "
    "classic baseline is the one with the highest mean test R@1. Δ R@1 is a method's mean minus the best "
    f"baseline's, with the {LEVEL:.0%} Welch t-interval over seeds (unpaired: seed s of two methods shares nothing; "
    "spreads need not be equal); the verdict is **beats** when the interval lies above 0, **loses** below 0, "
    "**ties** when it contains 0, which is also the verdict with one seed on either side (no interval: the "
    "data cannot tell them apart). Choosing the best baseline on the same means favours it slightly, so 'beats' is "
    "conservative. The test images are the same for every run, so their sampling noise is not in the interval. "
    "The last column is the gain the method's own paper printed over that baseline in its own table, under the "
    "paper's protocol (papers/fair/claims.yaml): beside the verdict, it shows how much of a claimed gain survives "
    "one protocol. Where the paper did not print that baseline, the printed one ranking highest here stands in, "
    "named. Protocol and choices: `papers/fair/method.md`."
)
NOT_RUN = "not run"


def _claim_text(cell: ClaimCell | None, best: str) -> str:
    if cell is None or cell.entry is None:
        return MISSING
    if cell.entry.none is not None:
        return "none printed (see below)"
    gain = cell.gain
    if gain is None:
        return f"printed baselines ({', '.join(cell.entry.baselines)}) not run here"
    where = f"{cell.paper} {gain.table.replace('table', 'Table ')}"
    remarks = [where] + (["quoted row"] if gain.quoted else []) + ([] if gain.exact else [f"{best} not printed"])
    return f"{signed(gain.value, 1)} over {gain.printed_method} ({'; '.join(remarks)})"


def _difference_text(section: DatasetSection, line: MethodLine) -> tuple[str, str]:
    if not line.ran:
        return MISSING, NOT_RUN
    if section.best is None:
        return MISSING, "no baseline run"
    if line is section.best:
        return MISSING, "reference"
    difference = section.differences.get(line.method)
    if difference is None:
        return MISSING, "no R@1"
    if not difference.measured:
        return f"{signed(difference.estimate, 1)} (no interval: 1 seed)", difference.verdict
    interval = f"[{signed(difference.low, 1)}, {signed(difference.high, 1)}]"
    return f"{signed(difference.estimate, 1)} {interval}", difference.verdict


def _files(count: int) -> str:
    return f"{count} results file{'' if count == 1 else 's'}"


def _heading(section: DatasetSection) -> str:
    trained_on = [d for d in section.results_datasets if d != section.dataset]
    suffix = f" recipes (trained and tested on {', '.join(trained_on)})" if trained_on else ""
    return f"## {dataset_name(section.dataset)}{suffix}"


def section_lines(section: DatasetSection) -> list[str]:
    """One dataset: its protocol as the runs recorded it, the best baseline, the table and the notes."""
    lines = [_heading(section), ""]
    if not section.ran:
        return [*lines, f"Not run: no results of any method on {dataset_name(section.dataset)}.", ""]
    files = sum(len(line.runs) for line in section.lines)
    lines += [f"Protocol (read from {_files(files)}): {section.protocol}.", ""]
    if section.protocol_differences:
        lines += ["> **Not one protocol:** " + " ".join(f"{text}." for text in section.protocol_differences), ""]
    best = section.best
    if best is not None:
        lines += [f"Best classic baseline (mean test R@1): **{best.method}**, {mean_std(best.values('R@1'))}.", ""]
    reference = best.method if best is not None else "best baseline"
    lines += [
        f"| Method | Kind | Seeds | R@1 | MAP@R | NMI | Validation R@1 | Δ R@1 vs {reference} [{LEVEL:.0%} CI] "
        f"| Verdict | Paper's printed gain over {reference} |",
        "|---|---|---|---|---|---|---|---|---|---|",
    ]
    for line in section.lines:
        difference, verdict = _difference_text(section, line)
        if line.ran:
            cells = [", ".join(map(str, line.seeds)), *(mean_std(line.values(m)) for m in (*METRICS, VALIDATION_R1))]
        else:
            cells = [NOT_RUN, *([MISSING] * (len(METRICS) + 1))]
        claim = _claim_text(section.claims.get(line.method), reference) if line.kind == "paper" else MISSING
        lines.append(f"| {line.method} | {line.kind} | {' | '.join(cells)} | {difference} | {verdict} | {claim} |")
    notes = [
        f"- {cell.paper}: {' '.join((cell.entry.none or cell.entry.note or '').split())}"
        for cell in section.claims.values()
        if cell.entry is not None and (cell.entry.none or cell.entry.note)
    ]
    return [*lines, "", "Notes on the printed gains (papers/fair/claims.yaml):", "", *notes, ""]


def fair_markdown(tables: FairTables, figure: Path | None) -> str:
    """The whole page: what it is, the tier, each dataset's section, the figure and how to read it."""
    source = recorded_path(tables.source)  # relative to the repository: the page names no machine's path
    lines = [TITLE, ""]
    if tables.tier == Tier.MINI:
        lines += [MINI_BANNER, ""]
    command = "dml tables fair" + (" --mini" if tables.tier == Tier.MINI else "")
    lines += [
        f"Tier: **{tables.tier.value}**. Built by `{command}` from {_files(tables.files)} in `{source}/`; "
        "every run's checkpoint was selected by `best_val_r1`.",
        "",
    ]
    if figure is not None:
        lines += [f"![R@1 per method]({figure.name})", ""]
    for section in tables.sections:
        lines += section_lines(section)
    lines += [HOW_TO_READ, ""]
    return "\n".join(lines)


def _number(value: float) -> float:
    return value if math.isfinite(value) else math.nan


def fair_rows(tables: FairTables) -> pd.DataFrame:
    """One row per dataset and method, numbers at full precision (machines read this, not the page)."""
    rows = []
    for section in tables.sections:
        for line in section.lines:
            row = {"dataset": section.dataset, "method": line.method, "kind": line.kind,
                   "seeds": ",".join(map(str, line.seeds)), "n_seeds": len(line.runs)}  # fmt: skip
            for metric in (*METRICS, VALIDATION_R1):
                values = line.values(metric)
                mean, std = pooled(values) if values else (math.nan, math.nan)
                row.update({f"{metric} mean": mean, f"{metric} std": std})
            difference = section.differences.get(line.method)
            cell = section.claims.get(line.method)
            gain = cell.gain if cell is not None else None
            row.update(
                reference=section.best.method if section.best is not None else "",
                difference=difference.estimate if difference else math.nan,
                interval_low=_number(difference.low) if difference else math.nan,
                interval_high=_number(difference.high) if difference else math.nan,
                verdict=_difference_text(section, line)[1],
                claimed_gain=gain.value if gain else math.nan,
                claimed_over=gain.baseline if gain else "",
                claimed_row=gain.printed_method if gain else "",
                claimed_table=f"{cell.paper}/{gain.table}" if gain and cell else "",
                claimed_exact=gain.exact if gain else "",
            )
            rows.append(row)
    return pd.DataFrame(rows)


def fair_csv(tables: FairTables, path: Path) -> Path:
    """Write :func:`fair_rows` atomically beside the page."""
    text = fair_rows(tables).to_csv(index=False, float_format="%.10g", lineterminator="\n")
    return atomic_write_text(path, text)
