"""The fair comparison's page, ``tables/[mini/]fair.md``, and its CSV (one line per dataset and method, and per
control comparison): what ``dml_core.tables.fair.study`` found, as a reader sees it."""

from __future__ import annotations

import math
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import pandas as pd

from dml_core.atomic_io import atomic_write_text
from dml_core.output_paths import recorded_path
from dml_core.tables.fair.search import SearchSection
from dml_core.tables.fair.study import (
    METRICS,
    VALIDATION_R1,
    ClaimCell,
    DatasetSection,
    FairTables,
    MethodLine,
)
from dml_core.tables.fair.verdicts import LEVEL, PAIRED, Difference
from dml_core.tables.gate.join import NOT_RUN, pooled
from dml_core.tables.pages.cells import MISSING, signed
from dml_core.tables.pages.labels import dataset_name
from dml_core.tables.pages.mini import mean_std
from dml_core.tier import Tier

TITLE = "# The fair comparison: the five methods and five classic baselines under one protocol"
MINI_BANNER = (
    "> **Mini tier: the whole protocol on the `embedded_mini` glyphs, NOT the study's numbers.** Every run trains "
    "from random weights on the generated glyphs with small images, a narrowed backbone and a few hundred steps on "
    "the CPU, so the pipeline (validation split, selection on it, every method and baseline, this table) is "
    "proven before a GPU is spent. A verdict here says nothing about which method wins at full scale."
)
HOW_TO_READ = (
    "**How to read it.** Each number is a test metric (%) of the evaluation the validation split picked (the "
    "split is carved from the training classes; the test classes never choose a checkpoint), as mean ± sample "
    "standard deviation over the seeds listed (one seed: the value alone). The loss hyper-parameters, though, are "
    "each method's paper's, which the papers chose on their test classes; the reading `fair.search-point` runs a "
    "search of them on the validation split instead (its section below, where it ran). The best classic baseline "
    "is the one with the highest mean test R@1; a control (a paper method's base loss on that method's own "
    "batches) is not ranked. Δ R@1 is a method's mean minus the best baseline's with its {level} t-interval over "
    "seeds: **paired** where the two trained on the same batches at each seed (the same sampler, seed and "
    "training split: `dml_core/tables/fair/batches.py`), the mean difference over the seeds both ran; **Welch** "
    "where their batches differ (damlrrm's two streams, cgml's two draws and its control against PK batches). "
    "The verdict is **beats** or **loses** where the two-sided p-value of that t-test, Holm-corrected over every "
    "verdict on this page, is under {alpha}, by the sign of Δ; **ties** otherwise, and wherever nothing measures "
    "a spread (one seed on either side, or the same number at every seed on both sides): there is then no "
    "interval. The interval shown is the uncorrected one, so an interval that excludes 0 can still read **ties**. "
    "Choosing the best baseline on the same test means inflates the reference: that makes **beats** harder and "
    "**loses** easier, for the paper methods and the other baselines alike, so a 'loses' is weaker evidence than "
    "its p-value says. Every run shares the one validation split and the same test images, whose sampling noise "
    "is in no interval. The last column is the gain the method's own paper printed over that baseline in its own "
    "table, under the paper's protocol (papers/fair/claims.yaml): beside the verdict, it shows how much of a "
    "claimed gain survives one protocol. Where the paper did not print that baseline, the printed one ranking "
    "highest here stands in, named. Protocol and choices: `papers/fair/method.md`."
).format(level=f"{LEVEL:.0%}", alpha=f"{1 - LEVEL:.2f}")
RULE_METRIC = {"best_val_r1": "validation R@1", "best_val_map_r": "validation MAP@R"}


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


def _p_text(difference: Difference) -> str:
    """The p-value and its Holm-adjusted value, or a dash where no interval was measured.

    >>> from dml_core.tables.fair.verdicts import welch_difference
    >>> _p_text(welch_difference([60.0, 62.0, 64.0], [50.0, 51.0, 52.0]))
    '0.004'
    """
    if not difference.measured:
        return MISSING

    def text(p: float) -> str:
        return "<0.001" if p < 0.001 else f"{p:.3f}"

    adjusted = f" (Holm {text(difference.adjusted_p)})" if math.isfinite(difference.adjusted_p) else ""
    return text(difference.p_value) + adjusted


def _interval_cells(difference: Difference) -> list[str]:
    """Δ with its interval (or why none), the interval's kind, the p-values and the verdict."""
    if not difference.measured:
        delta = f"{signed(difference.estimate, 1)} (no interval: {difference.unmeasured})"
    else:
        delta = f"{signed(difference.estimate, 1)} [{signed(difference.low, 1)}, {signed(difference.high, 1)}]"
    test = "paired (same batches)" if difference.test == PAIRED else "Welch (batches differ)"
    return [delta, test, _p_text(difference), difference.verdict]


def _difference_cells(section: DatasetSection, line: MethodLine) -> list[str]:
    if not line.ran:
        return [MISSING, MISSING, MISSING, NOT_RUN]
    if section.best is None:
        return [MISSING, MISSING, MISSING, "no baseline run"]
    if line is section.best:
        return [MISSING, MISSING, MISSING, "reference"]
    if line.kind == "control":
        return [MISSING, MISSING, MISSING, "control (below)"]
    difference = section.differences.get(line.method)
    if difference is None:
        return [MISSING, MISSING, MISSING, "no R@1"]
    return _interval_cells(difference)


def batches_label(sampler: Mapping[str, Any]) -> str:
    """A recipe's batch makeup in a few words.

    >>> batches_label({"name": "paired", "params": {"classes_per_batch": 6, "images_per_class": 5}})
    '2 draws of 6×5'
    """
    params = sampler.get("params", {})
    p, k = params.get("classes_per_batch"), params.get("images_per_class")
    labels = {
        "pk": f"PK {p}×{k}",
        "paired": f"2 draws of {p}×{k}",
        "two_stream": f"{p}×{k} + {p * k if p and k else '?'} shuffled",
        "random": f"random {params.get('batch_size')}",
    }
    return labels.get(str(sampler.get("name")), str(sampler.get("name")))


def _batches(line: MethodLine) -> str:
    found = dict.fromkeys(batches_label(run.results.recipe.content.get("sampler", {})) for run in line.runs)
    return "; ".join(found) or MISSING


def _files(count: int) -> str:
    return f"{count} results file{'' if count == 1 else 's'}"


def _heading(section: DatasetSection) -> str:
    trained_on = [d for d in section.results_datasets if d != section.dataset]
    suffix = f" recipes (trained and tested on {', '.join(trained_on)})" if trained_on else ""
    return f"## {dataset_name(section.dataset)}{suffix}"


def comparison_table(section: DatasetSection, claims: bool = True) -> list[str]:
    """Every method of ``section`` against its best baseline (with the papers' printed gains where ``claims``)."""
    best = section.best
    reference = best.method if best is not None else "best baseline"
    claim_header = f" Paper's printed gain over {reference} |" if claims else ""
    lines = [
        f"| Method | Kind | Batches | Seeds | R@1 | MAP@R | NMI | Validation R@1 | Δ R@1 vs {reference} "
        f"[{LEVEL:.0%} CI] | Interval | p (Holm) | Verdict |{claim_header}",
        "|---|---|---|---|---|---|---|---|---|---|---|---|" + ("---|" if claims else ""),
    ]
    for line in section.lines:
        if line.ran:
            cells = [_batches(line), ", ".join(map(str, line.seeds))]
            cells += [mean_std(line.values(m)) for m in (*METRICS, VALIDATION_R1)]
        else:
            cells = [MISSING, NOT_RUN, *([MISSING] * (len(METRICS) + 1))]
        cells += _difference_cells(section, line)
        if claims:
            cells.append(_claim_text(section.claims.get(line.method), reference) if line.kind == "paper" else MISSING)
        lines.append(f"| {line.method} | {line.kind} | {' | '.join(cells)} |")
    return lines


def control_lines(section: DatasetSection) -> list[str]:
    """The controls' comparisons: a paper method against its base loss on its own batches, and that base loss on
    those batches against the classic baseline on PK batches."""
    if not section.controls:
        return []
    lines = [
        "Like with like (reproduce/fair/controls.yaml): a paper method against its own base loss on the same "
        "batches, where only the method's term differs; and that base loss on the method's batches against the "
        "classic baseline's PK batches, where only the batch makeup differs. The two add up to the method's "
        "difference from that baseline.",
        "",
        f"| Comparison | What alone differs | Seeds | Δ R@1 [{LEVEL:.0%} CI] | Interval | p (Holm) | Verdict |",
        "|---|---|---|---|---|---|---|",
    ]
    for control in section.controls:
        seeds = sorted(set(control.ours.seeds) & set(control.reference.seeds)) or control.ours.seeds
        cells = [f"{control.ours.method} − {control.reference.method}", control.differs_by,
                 ", ".join(map(str, seeds)), *_interval_cells(control.difference)]  # fmt: skip
        lines.append(f"| {' | '.join(cells)} |")
    return [*lines, ""]


def other_rule_lines(section: DatasetSection, rule: str, other: str) -> list[str]:
    """Each method's test numbers had the other validation rule picked its evaluations, from the same runs."""
    ran = [line for line in section.lines if line.values("R@1")]
    if not ran:
        return []
    whose = ", MLRC's selection metric" if other == "best_val_map_r" else ""
    lines = [
        f"Picked on {RULE_METRIC[other]} instead (`{other}`{whose}), from the same runs (the pick does not change "
        "training):",
        "",
        f"| Method | R@1 ({RULE_METRIC[rule]} pick) | R@1 ({RULE_METRIC[other]} pick) | MAP@R ({RULE_METRIC[other]} "
        "pick) | Seeds whose pick moved |",
        "|---|---|---|---|---|",
    ]
    for line in ran:
        moved = sum(run.pick()["iteration"] != run.pick(other)["iteration"] for run in line.runs)
        lines.append(f"| {line.method} | {mean_std(line.values('R@1'))} | {mean_std(line.values('R@1', other))} | "
                     f"{mean_std(line.values('MAP@R', other))} | {moved} of {len(line.runs)} |")  # fmt: skip
    return [*lines, ""]


def claim_notes(section: DatasetSection) -> list[str]:
    """Why a paper prints no pair, what its pair is, and the transcription's remarks on the rows used."""
    notes = []
    for cell in section.claims.values():
        if cell.entry is None:
            continue
        text = " ".join((cell.entry.none or cell.entry.note or "").split())
        if cell.gain is not None and cell.gain.remarks:
            text += " Remarks on the printed rows (published.yaml): " + " ".join(cell.gain.remarks)
        if text:
            notes.append(f"- {cell.paper}: {text.strip()}")
    return ["Notes on the printed gains (papers/fair/claims.yaml):", "", *notes, ""] if notes else []


def section_lines(section: DatasetSection, tables: FairTables) -> list[str]:
    """One dataset: its protocol as the runs recorded it, the best baseline, the table, the controls, the other
    selection rule's picks and the notes."""
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
    lines += [*comparison_table(section), ""]
    lines += control_lines(section)
    lines += other_rule_lines(section, tables.rule, tables.other_rule)
    return [*lines, *claim_notes(section)]


def search_lines(search: SearchSection) -> list[str]:
    """A dataset's validation search: each method's points and its pick, then the comparison of the picks."""
    section = search.section
    lines = [
        f"### Validation search on {dataset_name(section.dataset)} (reading `fair.search-point`)",
        "",
        f"Each method's point with the best mean validation {search.metric} over its seeds (the paper's point first "
        "on a tie); the test classes choose neither the point nor the checkpoint. Three points of one parameter "
        "each (reproduce/fair/assumptions.yaml): a check that a verdict does not hinge on the papers' own values, "
        "not a tuning to their best.",
        "",
        f"| Method | Validation {search.metric} by point (seeds) | Picked |",
        "|---|---|---|",
    ]
    for method in search.methods:
        points = " · ".join(f"{point} {mean:.1f} ({method.seeds[point]})" for point, mean in method.validation.items())
        lines.append(f"| {method.method} | {points} | {method.chosen} |")
    lines += ["", *comparison_table(section, claims=False), ""]
    return lines


def fair_markdown(tables: FairTables, figure: Path | None) -> str:
    """The whole page: what it is, the tier, each dataset's section, the searches, the figure and how to read it."""
    source = recorded_path(tables.source)  # relative to the repository: the page names no machine's path
    lines = [TITLE, ""]
    if tables.tier == Tier.MINI:
        lines += [MINI_BANNER, ""]
    command = "nox -s dml -- tables fair" + (" --mini" if tables.tier == Tier.MINI else "")
    tested = sum(difference.measured for difference in tables.all_differences())
    lines += [
        f"Tier: **{tables.tier.value}**. Built by `{command}` from {_files(tables.files)} in `{source}/`; every "
        f"run's checkpoint was selected by `{tables.rule}` ({RULE_METRIC[tables.rule]}). The verdicts are "
        f"Holm-corrected over the {tested} on this page that have an interval.",
        "",
    ]
    if tables.left_out:
        listed = ", ".join(f"`{variant}` ({count})" for variant, count in sorted(tables.left_out.items()))
        lines += [f"Not in these tables: the results files of runs under other readings: {listed}.", ""]
    if figure is not None:
        lines += [f"![R@1 per method]({figure.name})", ""]
    for section in tables.sections:
        lines += section_lines(section, tables)
    for search in tables.searches:
        lines += search_lines(search)
    lines += [HOW_TO_READ, ""]
    return "\n".join(lines)


def _number(value: float) -> float:
    return value if math.isfinite(value) else math.nan


def _difference_columns(difference: Difference | None) -> dict[str, Any]:
    if difference is None:
        return {"difference": math.nan, "interval_low": math.nan, "interval_high": math.nan, "interval": "",
                "p_value": math.nan, "p_holm": math.nan}  # fmt: skip
    return {
        "difference": difference.estimate,
        "interval_low": _number(difference.low),
        "interval_high": _number(difference.high),
        "interval": difference.test if difference.measured else f"none ({difference.unmeasured})",
        "p_value": difference.p_value,
        "p_holm": difference.adjusted_p,
    }


def fair_rows(tables: FairTables) -> pd.DataFrame:
    """One row per dataset and method, and per control comparison, numbers at full precision (machines read this,
    not the page)."""
    rows = []
    for section in tables.sections:
        for line in section.lines:
            row = {"dataset": section.dataset, "method": line.method, "kind": line.kind,
                   "seeds": ",".join(map(str, line.seeds)), "n_seeds": len(line.runs)}  # fmt: skip
            for metric in (*METRICS, VALIDATION_R1):
                values = line.values(metric)
                mean, std = pooled(values) if values else (math.nan, math.nan)
                row.update({f"{metric} mean": mean, f"{metric} std": std})
            cell = section.claims.get(line.method)
            gain = cell.gain if cell is not None else None
            row.update(
                reference=section.best.method if section.best is not None else "",
                **_difference_columns(section.differences.get(line.method)),
                verdict=_difference_cells(section, line)[-1],
                claimed_gain=gain.value if gain else math.nan,
                claimed_over=gain.baseline if gain else "",
                claimed_row=gain.printed_method if gain else "",
                claimed_table=f"{cell.paper}/{gain.table}" if gain and cell else "",
                claimed_exact=gain.exact if gain else "",
            )
            rows.append(row)
        for control in section.controls:
            rows.append({"dataset": section.dataset, "method": control.ours.method, "kind": "same-batch comparison",
                         "reference": control.reference.method, **_difference_columns(control.difference),
                         "verdict": control.difference.verdict})  # fmt: skip
    return pd.DataFrame(rows)


def fair_csv(tables: FairTables, path: Path) -> Path:
    """Write :func:`fair_rows` atomically beside the page."""
    text = fair_rows(tables).to_csv(index=False, float_format="%.10g", lineterminator="\n")
    return atomic_write_text(path, text)
