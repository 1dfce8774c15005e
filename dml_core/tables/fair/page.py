"""The fair comparison's page, ``tables/[mini/]fair.md``, and its CSV (one line per dataset and method, and per
comparison): what ``dml_core.tables.fair.study`` found, as a reader sees it."""

from __future__ import annotations

import math
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import pandas as pd

from dml_core.atomic_io import atomic_write_text
from dml_core.command_line import DML
from dml_core.output_paths import recorded_path
from dml_core.results import ResultsFile
from dml_core.tables.fair.search import SearchSection
from dml_core.tables.fair.study import (
    HYPOTHESIS,
    METRICS,
    VALIDATION_R1,
    VALIDATION_RULES,
    Comparison,
    DatasetSection,
    FairTables,
    MethodLine,
)
from dml_core.tables.fair.verdicts import PAIRED
from dml_core.tables.gate.join import NOT_RUN, pooled
from dml_core.tables.pages.cells import MISSING, signed
from dml_core.tables.pages.labels import dataset_name
from dml_core.tables.pages.mini import mean_std
from dml_core.tier import Tier

TITLE = "# The fair comparison: the five methods and five classic baselines under one protocol"
MINI_BANNER = (
    "> **Mini tier: the whole protocol on the `embedded_mini` glyphs, a check of the machinery, NOT the study's "
    "numbers.** Every run trains from random weights on the generated glyphs with small images, a narrowed backbone "
    "and a hundred steps on the CPU, so the pipeline (validation split, selection on it, every method and baseline, "
    "the pairing, the correction, this page) is proven before a GPU is spent. It prints verdicts only where its "
    "reference clears the mini tier's learning bar, and even then they say nothing about full scale."
)
UNTRAINED_FLAG = "⚠"
HOW_TO_READ = (
    "**How to read it.** Each number is a test metric (%) of the evaluation the validation split picked (the split "
    "is carved from the training classes; the test classes never choose a checkpoint), as mean ± sample standard "
    "deviation over the seeds listed (one seed: the value alone). The loss hyper-parameters are each method's "
    "paper's, which the papers chose on their test classes, and the learning rate is the protocol's; the reading "
    "`fair.search-point` searches both on the validation split, the same points for every method (its section "
    "below, where it ran). A picked step marked {flag} is the run's untrained evaluation: its training did not beat "
    "its random start on validation, and the run enters no comparison. The reference is the classic baseline with "
    "the best mean validation metric of the selection rule, picked on validation, never on the test numbers it is "
    "compared with; a control (a paper method's base loss on that method's own batches) is not ranked. Δ is a "
    "method's mean minus the reference's over their trained runs: **paired** where the two runs of each seed "
    "trained on the same batches under the same code (the same recorded sampler, seed and training split, at one "
    "committed version with one data-loading pipeline: `dml_core/tables/fair/batches.py`), the mean difference over "
    "the seeds both ran; **Welch** otherwise, with the reason. The declared hypotheses (`reproduce/fair/study.yaml`: "
    "each paper method against the reference, per data set, in R@1 and MAP@R) are judged together: Holm's "
    "adjustment over the whole declared family, those not run or not estimable counted as untested. **better** or "
    "**worse**: the Holm-adjusted p-value is under {level}, by the sign of Δ, and the interval shown, at the level "
    "the adjustment implies for that row, excludes 0; **equivalent**: the Holm-adjusted p-value of the two "
    "one-sided tests (TOST) against the declared margin is under {level}; **inconclusive** otherwise; **not "
    "estimable** where nothing measures a spread (one seed on a side, or the same number, or the same difference, "
    "at every seed). 'Detectable' is the smallest true difference the test would find with {power} probability at "
    "Holm's strictest step (level / family size), at the observed spread and degrees of freedom: a difference "
    "below it can be real and still read inconclusive. Everything else is exploratory: each comparison alone, "
    "unadjusted, at 95%. Every run shares the one validation split and the same test images, whose sampling noise "
    "is in no interval. What the papers printed is set beside this study's difference from the same baseline "
    "(papers/fair/claims.yaml), under the paper's protocol and this one. Protocol and choices: "
    "`papers/fair/method.md`; the statistics: `docs/fair.md`."
)
RULE_METRIC = {"best_val_r1": "validation R@1", "best_val_map_r": "validation MAP@R"}
PLACES = {"MAP@R": 2}  # MAP@R is small at the mini tier (tables/mini/fair.md): one decimal would hide its spread


def _places(metric: str) -> int:
    return PLACES.get(metric, 1)


def _metric_cells(line: MethodLine) -> list[str]:
    return [mean_std(line.values(metric), _places(metric)) for metric in (*METRICS, VALIDATION_R1)]


def _p(p: float) -> str:
    return MISSING if not math.isfinite(p) else "<0.001" if p < 0.001 else f"{p:.3f}"


def _test(comparison: Comparison) -> str:
    difference = comparison.difference
    if difference is None:
        return MISSING
    if difference.test == PAIRED:
        return "paired (same batches and code)"
    return f"Welch ({comparison.shared})"


def _seed_list(comparison: Comparison) -> str:
    """The seeds a comparison is over: one list when both sides share it (paired), else ours / the reference's."""
    ours, theirs = (", ".join(map(str, seeds)) or MISSING for seeds in comparison.seeds)
    return ours if ours == theirs else f"{ours} / {theirs}"


def _seeds(comparison: Comparison) -> str:
    text = _seed_list(comparison)
    out = [f"{method} {', '.join(map(str, seeds))}" for method, seeds in comparison.left_out.items()]
    return text + (f" (out, untrained: {'; '.join(out)})" if out else "")


def _word(comparison: Comparison, section: DatasetSection) -> str:
    """The verdict word, or why there is none."""
    if comparison.difference is None:
        return f"none: {comparison.why}"
    if not section.compares:
        return MISSING
    word = comparison.verdict.word if comparison.verdict is not None else MISSING
    return word if comparison.kind == HYPOTHESIS else f"{word} (exploratory)"


def _delta(comparison: Comparison) -> list[str]:
    """Δ with its interval (at the verdict's confidence) or why none, the test, the p-values and the detectable
    difference."""
    difference, verdict = comparison.difference, comparison.verdict
    if difference is None or verdict is None:
        return [MISSING] * 5
    places = _places(comparison.metric)
    if not difference.measured:
        delta = f"{signed(difference.estimate, places)} (no interval: {difference.unmeasured})"
        return [delta, _test(comparison), MISSING, MISSING, MISSING]
    low, high = verdict.interval
    interval = f"[{signed(low, places)}, {signed(high, places)}]"
    delta = f"{signed(difference.estimate, places)} {interval} ({verdict.confidence:.2%})".replace(".00%", "%")
    p = _p(difference.p_value)
    tost = _p(difference.tost_p(verdict.margin))
    if verdict.family_size > 1:
        p, tost = f"{p} (Holm {_p(verdict.adjusted_p)})", f"{tost} (Holm {_p(verdict.adjusted_tost_p)})"
    return [delta, _test(comparison), p, tost, f"{verdict.detectable:.{places}f}"]


def batches_label(sampler: Mapping[str, Any], record: Mapping[str, Any] | None = None) -> str:
    """A run's batch makeup in a few words, from its recipe's ``sampler`` and, where recorded, the sampler as built
    (``record``: damlrrm's shuffled pool).

    >>> batches_label({"name": "paired", "params": {"classes_per_batch": 6, "images_per_class": 5}})
    '2 draws of 6×5'
    >>> batches_label({"name": "two_stream", "params": {"classes_per_batch": 6, "images_per_class": 5}},
    ...               {"settings": {"shuffled_pool_size": None}, "derived": {"pool_images": 150}})
    '6×5 + 30 shuffled (pool: 150 images, half)'
    """
    from dml_core.data.samplers import SAMPLERS  # here: the data package loads torch, most pages do not need it

    name = str(sampler.get("name"))
    label = SAMPLERS[name].batch_makeup(sampler.get("params", {})) if name in SAMPLERS else name
    images = (record or {}).get("derived", {}).get("pool_images")
    if images is not None:
        size = (record or {}).get("settings", {}).get("shuffled_pool_size")
        label += f" (pool: {images} images, {'half' if size is None else size})"
    return label


def _record(results: ResultsFile) -> dict | None:
    return results.sampler.model_dump() if results.sampler is not None else None


def _batches(line: MethodLine) -> str:
    found = dict.fromkeys(
        batches_label(run.results.recipe.content.get("sampler", {}), _record(run.results)) for run in line.runs
    )
    return "; ".join(found) or MISSING


def _picked_steps(line: MethodLine) -> str:
    return ", ".join(
        f"{run.pick()['iteration']}{' ' + UNTRAINED_FLAG if run.picked_untrained else ''}" for run in line.runs
    )


def _files(count: int) -> str:
    return f"{count} results file{'' if count == 1 else 's'}"


def _heading(section: DatasetSection) -> str:
    trained_on = [d for d in section.results_datasets if d != section.dataset]
    suffix = f" recipes (trained and tested on {', '.join(trained_on)})" if trained_on else ""
    return f"## {dataset_name(section.dataset)}{suffix}"


def runs_table(section: DatasetSection) -> list[str]:
    """Every method of ``section``: its batches, seeds, picked steps and test metrics."""
    lines = [
        "| Method | Kind | Batches | Seeds | Picked step | R@1 | MAP@R | NMI | Validation R@1 |",
        "|---|---|---|---|---|---|---|---|---|",
    ]
    for line in section.lines:
        if line.ran:
            cells = [_batches(line), ", ".join(map(str, line.seeds)), _picked_steps(line), *_metric_cells(line)]
        else:
            cells = [MISSING, NOT_RUN, *([MISSING] * (len(METRICS) + 2))]
        role = "reference" if line is section.reference else line.kind
        lines.append(f"| {line.method} | {role} | {' | '.join(cells)} |")
    flagged = [line for line in section.lines if line.untrained_picks]
    if flagged:
        listed = "; ".join(f"{line.method} seed {', '.join(map(str, line.untrained_picks))}" for line in flagged)
        note = (
            f"{UNTRAINED_FLAG} The pick is the run's untrained evaluation (step 0): training did not beat its random "
        )
        lines += ["", note + f"start on validation, so the run enters no comparison ({listed})."]
    return lines


def comparison_table(section: DatasetSection, comparisons: list[Comparison], first: str) -> list[str]:
    """One row per comparison: ``first`` names its first column (the method, or the comparison)."""
    lines = [
        f"| {first} | Metric | Seeds | Δ [interval (confidence)] | Test | p | TOST p (±margin) | Detectable "
        "| Verdict |",
        "|---|---|---|---|---|---|---|---|---|",
    ]
    for comparison in comparisons:
        name = (
            comparison.ours.method if first == "Method" else f"{comparison.ours.method} − {comparison.reference.method}"
        )
        cells = [name, comparison.metric, _seeds(comparison), *_delta(comparison), _word(comparison, section)]
        lines.append(f"| {' | '.join(cells)} |")
    return lines


def learning_lines(section: DatasetSection) -> list[str]:
    """At the mini tier: why the page cannot compare, where its reference does not clear the learning bar."""
    check = section.learning
    if check is None or check.clears:
        return []
    gain = "no gain can be measured (a run made no untrained evaluation)" if check.gain is None else (
        f"it gains {signed(check.gain, 1)} test R@1 over its untrained evaluation (mean over its seeds)")  # fmt: skip
    return [
        f"> **This tier cannot compare the methods here.** The reference, {check.reference}, does not clear the mini "
        f"tier's learning bar: {gain}, under the {check.bar:g} points every mini page asks of a run from random "
        "weights (`dml_core/tables/pages/mini.py`). Methods that have barely left their random start cannot be told "
        "apart by any difference between them, so no verdict word is printed; the differences and intervals below "
        "check the machinery only (the split, the selection, the pairing, the correction).",
        "",
    ]


def printed_lines(section: DatasetSection) -> list[str]:
    """Each paper method's printed gain over each baseline its paper printed that ran here, beside this study's
    difference from the same baseline."""
    if not section.printed:
        return []
    lines = [
        "What the papers printed, beside this study (exploratory, unadjusted): each paper's gain over a classic "
        "baseline in its own table, under its own protocol (papers/fair/claims.yaml), and this study's difference "
        "of the same method from the same baseline.",
        "",
        "| Method | Paper's table | Over (as printed) | Printed gain | This study's Δ [interval (confidence)] | Test "
        "| Seeds | Verdict |",
        "|---|---|---|---|---|---|---|---|",
    ]
    for printed in section.printed:
        gain, comparison = printed.gain, printed.comparison
        where = f"{comparison.ours.method} {gain.table.replace('table', 'Table ')}" + (
            " (quoted row)" if gain.quoted else "")  # fmt: skip
        delta = _delta(comparison)
        cells = [comparison.ours.method, where, f"{gain.baseline} ({gain.printed_method})",
                 f"{signed(gain.value, 1)} {gain.metric}", delta[0], delta[1], _seeds(comparison),
                 _word(comparison, section)]  # fmt: skip
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
                     f"{mean_std(line.values('MAP@R', other), 2)} | {moved} of {len(line.runs)} |")  # fmt: skip
    return [*lines, ""]


def claim_notes(section: DatasetSection) -> list[str]:
    """Why a paper prints no pair, what its pair is, and the transcription's remarks on the rows used."""
    notes = []
    remarks = {(g.comparison.ours.method, r) for g in section.printed for r in g.gain.remarks}
    for method, entry in section.claims.items():
        text = " ".join((entry.none or entry.note or "").split())
        own = [remark for paper, remark in sorted(remarks) if paper == method]
        if own:
            text += " Remarks on the printed rows (published.yaml): " + " ".join(own)
        if text:
            notes.append(f"- {method}: {text.strip()}")
    return ["Notes on the printed gains (papers/fair/claims.yaml):", "", *notes, ""] if notes else []


def reference_line(section: DatasetSection, rule: str) -> list[str]:
    reference = section.reference
    if reference is None:
        return ["No classic baseline ran: nothing to compare with.", ""]
    metric = VALIDATION_RULES[rule]
    validation = mean_std(reference.validation_values(metric), _places(metric))
    return [
        f"Reference (the classic baseline with the best mean {RULE_METRIC[rule]}): **{reference.method}**, "
        f"{RULE_METRIC[rule]} {validation}, test R@1 {mean_std(reference.values('R@1'))}.",
        "",
    ]


def section_lines(section: DatasetSection, tables: FairTables) -> list[str]:
    """One dataset: its protocol as the runs recorded it, the reference, the runs, the declared hypotheses, the
    exploratory comparisons, the printed gains, the other selection rule's picks and the notes."""
    lines = [_heading(section), ""]
    if not section.ran:
        return [*lines, f"Not run: no results of any method on {dataset_name(section.dataset)}.", ""]
    files = sum(len(line.runs) for line in section.lines)
    lines += [f"Protocol (read from {_files(files)}): {section.protocol}.", ""]
    if section.protocol_differences:
        lines += ["> **Not one protocol:** " + " ".join(f"{text}." for text in section.protocol_differences), ""]
    lines += [*reference_line(section, tables.rule), *learning_lines(section), *runs_table(section), ""]
    if section.hypotheses:
        lines += [
            f"Declared hypotheses (reproduce/fair/study.yaml), each paper method against the reference; Holm over "
            f"the family of {tables.family_size}, the interval at the level the adjustment implies:",
            "",
            *comparison_table(section, section.hypotheses, "Method"),
            "",
        ]
    exploratory = [*section.exploratory, *section.controls]
    if exploratory:
        lines += [
            "Exploratory, unadjusted (each comparison alone, 95%): the other lines against the reference, and "
            "cgml's control (reproduce/fair/controls.yaml): cgml against its own base loss on the same batches, "
            "where only its term differs, and that base loss on cgml's batches against the classic baseline's PK "
            "batches, where only the batch makeup differs.",
            "",
            *comparison_table(section, exploratory, "Comparison"),
            "",
        ]
    lines += printed_lines(section)
    lines += other_rule_lines(section, tables.rule, tables.other_rule)
    return [*lines, *claim_notes(section)]


def search_lines(search: SearchSection, tables: FairTables) -> list[str]:
    """A dataset's validation search: each method's points and its pick, then the comparisons of the picks."""
    section = search.section
    lines = [
        f"### Validation search on {dataset_name(section.dataset)} (reading `fair.search-point`, exploratory)",
        "",
        f"Each method's point with the best mean validation {search.metric} over its seeds (the paper's point first "
        f"on a tie), of the points every method gets alike ({', '.join(search.points)}: reproduce/fair/study.yaml); "
        "the test classes choose neither the point nor the checkpoint. The comparisons of the picked points reuse "
        "the table's runs and are outside the declared family: exploratory, unadjusted.",
        "",
        f"| Method | Validation {search.metric} by point (seeds) | Picked |",
        "|---|---|---|",
    ]
    for method in search.methods:
        points = " · ".join(f"{point} {mean:.1f} ({method.seeds[point]})" for point, mean in method.validation.items())
        lines.append(f"| {method.method} | {points} | {method.chosen} |")
    lines += ["", *reference_line(section, tables.rule), *learning_lines(section), *runs_table(section), ""]
    comparisons = [*section.hypotheses, *section.exploratory]
    return [*lines, *comparison_table(section, comparisons, "Comparison"), ""] if comparisons else lines


def design_lines(tables: FairTables) -> list[str]:
    """The study's design as declared before the runs, with this page's family."""
    study = tables.study
    datasets = [dataset_name(d) for d in dict.fromkeys(d for _, d, _ in study.family(tables.tier))]
    where = " and ".join(datasets) + (" (the mini tier's one data set)" if tables.tier == Tier.MINI else "")
    margins = ", ".join(f"±{margin:g} ({metric})" for metric, margin in study.equivalence_margin.items())
    points = ", ".join(study.search.points)
    factors = " and ".join(f"{factor:g}" for factor in study.search.factors)
    return [
        f"**Declared before the runs** (`reproduce/fair/study.yaml`): each of {', '.join(study.hypotheses.methods)} "
        f"against the reference, in test {' and '.join(study.hypotheses.metrics)}, on {where}: a family of "
        f"{tables.family_size} hypotheses, Holm-adjusted together at a family-wise level of {study.level:g}. The "
        f"reference: the classic baseline with the best mean {RULE_METRIC[tables.rule]} (picked on validation). "
        f"Equivalence margin (TOST): {margins} points. Seeds at full scale: {len(study.seeds)} "
        f"({', '.join(map(str, study.seeds))}), the same for every method. Validation search: "
        f"{len(study.search.points)} points beside the paper's for every method and baseline ({points}: its main "
        f"loss hyper-parameter and the learning rate, each times {factors}), picked on validation: "
        f"{len(study.search.points)} more runs per method, data set and seed. Everything else on this page is "
        "exploratory and unadjusted.",
        "",
    ]


def fair_markdown(tables: FairTables, figure: Path | None) -> str:
    """The whole page: what it is, the tier, the design, each dataset's section, the searches, the figure and how to
    read it."""
    source = recorded_path(tables.source)  # relative to the repository: the page names no machine's path
    lines = [TITLE, ""]
    if tables.tier == Tier.MINI:
        lines += [MINI_BANNER, ""]
    command = f"{DML} tables fair" + (" --mini" if tables.tier == Tier.MINI else "")
    lines += [
        f"Tier: **{tables.tier.value}**. Built by `{command}` from {_files(tables.files)} in `{source}/`; every "
        f"run's checkpoint was selected by `{tables.rule}` ({RULE_METRIC[tables.rule]}).",
        "",
        *design_lines(tables),
    ]
    if tables.left_out:
        listed = ", ".join(f"`{variant}` ({count})" for variant, count in sorted(tables.left_out.items()))
        lines += [f"Not in these tables: the results files of runs under other readings: {listed}.", ""]
    if figure is not None:
        lines += [f"![R@1 per method]({figure.name})", ""]
    for section in tables.sections:
        lines += section_lines(section, tables)
    for search in tables.searches:
        lines += search_lines(search, tables)
    study = tables.study
    lines += [HOW_TO_READ.format(flag=UNTRAINED_FLAG, level=f"{study.level:g}", power=f"{study.power:.0%}"), ""]
    return "\n".join(lines)


def _number(value: float) -> float:
    return value if math.isfinite(value) else math.nan


def comparison_row(section: DatasetSection, comparison: Comparison, kind: str) -> dict[str, Any]:
    """A comparison's CSV line, at full precision."""
    difference, verdict = comparison.difference, comparison.verdict
    row: dict[str, Any] = {"dataset": section.dataset, "method": comparison.ours.method, "kind": kind,
                           "reference": comparison.reference.method, "metric": comparison.metric,
                           "seeds": _seed_list(comparison)}  # fmt: skip
    if difference is None or verdict is None:
        return {**row, "interval": "", "verdict": _word(comparison, section)}
    low, high = verdict.interval
    return {
        **row,
        "difference": difference.estimate,
        "interval": difference.test if difference.measured else f"none ({difference.unmeasured})",
        "not_shared": comparison.shared,
        "confidence": verdict.confidence,
        "interval_low": _number(low),
        "interval_high": _number(high),
        "p_value": difference.p_value,
        "p_holm": verdict.adjusted_p if verdict.family_size > 1 else math.nan,
        "tost_p": difference.tost_p(verdict.margin),
        "tost_p_holm": verdict.adjusted_tost_p if verdict.family_size > 1 else math.nan,
        "margin": verdict.margin,
        "family_size": verdict.family_size,
        "detectable": verdict.detectable,
        "verdict": verdict.word if section.compares else "cannot compare (mini tier)",
    }


def fair_rows(tables: FairTables) -> pd.DataFrame:
    """One row per dataset and method, and per comparison, numbers at full precision (machines read this, not the
    page)."""
    rows = []
    for section in tables.sections:
        for line in section.lines:
            row = {"dataset": section.dataset, "method": line.method, "kind": line.kind,
                   "seeds": ",".join(map(str, line.seeds)), "n_seeds": len(line.runs),
                   "picked_steps": ",".join(str(run.pick()["iteration"]) for run in line.runs),
                   "untrained_picks": ",".join(map(str, line.untrained_picks)),
                   "reference": section.reference.method if section.reference is not None else ""}  # fmt: skip
            for metric in (*METRICS, VALIDATION_R1):
                values = line.values(metric)
                mean, std = pooled(values) if values else (math.nan, math.nan)
                row.update({f"{metric} mean": mean, f"{metric} std": std})
            row["verdict"] = NOT_RUN if not line.ran else ""
            rows.append(row)
        for comparison in section.hypotheses:
            rows.append(comparison_row(section, comparison, "hypothesis"))
        for comparison in section.exploratory:
            rows.append(comparison_row(section, comparison, "exploratory"))
        for comparison in section.controls:
            rows.append(comparison_row(section, comparison, "same-batch comparison"))
        for printed in section.printed:
            gain = printed.gain
            rows.append({**comparison_row(section, printed.comparison, "printed gain"), "printed_gain": gain.value,
                         "printed_row": gain.printed_method, "printed_table": f"{printed.comparison.ours.method}/"
                         f"{gain.table}"})  # fmt: skip
    return pd.DataFrame(rows)


def fair_csv(tables: FairTables, path: Path) -> Path:
    """Write :func:`fair_rows` atomically beside the page."""
    text = fair_rows(tables).to_csv(index=False, float_format="%.10g", lineterminator="\n")
    return atomic_write_text(path, text)
