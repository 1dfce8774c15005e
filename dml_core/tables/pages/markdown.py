"""One paper's page, ``tables/[smoke/]<key>.md``: the summary first (per table: rows within the gate, below,
above, not run; the claims' verdicts), how the numbers were obtained, then every published table in the paper's
shape with its figure, training time as the paper prints it, the claims in full and the linear runs."""

from __future__ import annotations

import os
from collections import Counter
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path

import pandas as pd

from dml_core.command_line import DML
from dml_core.linear.protocol import rescore
from dml_core.linear.results_file import describe_linear_protocol
from dml_core.provenance import git_starts
from dml_core.published import PublishedPaper, PublishedTable, find_row
from dml_core.readable import NOT_AVAILABLE, readable_duration
from dml_core.recipes.assumptions import SHARED_READINGS_FILE, is_shared_reading
from dml_core.results import LinearResultsFile, ResultsFile
from dml_core.tables.gate.join import NOT_RUN as ROW_NOT_RUN
from dml_core.tables.gate.join import LoadedResults, Refusal
from dml_core.tables.gate.known_gaps import KnownGaps
from dml_core.tables.gate.planned import Plan
from dml_core.tables.gate.tolerances import Tolerances
from dml_core.tables.pages.cells import LEGEND
from dml_core.tables.pages.claim_verdicts import FAILS, HOLDS, NOT_RUN, SMOKE, WITHIN_NOISE, ClaimVerdict
from dml_core.tables.pages.labels import dataset_name, row_label
from dml_core.tables.pages.paper_tables import QUOTED, has_reproduced_number, paper_shaped, table_markdown
from dml_core.tables.pages.summary import counts_text, table_counts, verdict_counts
from dml_core.tables.pages.timing import paper_timing_table, timing_summary
from dml_core.tier import Tier

SMOKE_BANNER = (
    "> **Smoke run: these numbers are NOT comparable with the paper.** They come from the embedded glyph "
    "dataset, random initialisation, small images and a few iterations on the CPU; they only show that every "
    "recipe runs end to end. No status or claim verdict is given (n/a (smoke))."
)
LINEAR_SMOKE_BANNER = (
    "> The linear (Table 2) smoke lines use the real data set but only a few splits, a grid thinned to about "
    "one point and a short solver budget (see the linear runs table): not comparable with the paper either."
)
# The shared reading ``selection`` (reproduce/readings.yaml): its value best-r1 is the rule best_r1, final is final.
SELECTION_RULES = {
    "best_r1": "best_r1: the evaluation with the best test R@1 over training (earliest on ties); every metric "
    "of the row is taken from that one evaluation (the reading `selection` at its default, best-r1; '· final' "
    "beside a number is its other value, final, from the same run)",
    "final": "final: the last evaluation of the run (the reading `selection` at final)",
    "best_val_r1": "best_val_r1: the evaluation with the best R@1 on the validation split held out of the training "
    "classes (earliest on ties); every metric of the row is that evaluation's test number",
    "best_val_map_r": "best_val_map_r: the evaluation with the best MAP@R on the validation split held out of the "
    "training classes (earliest on ties); every metric of the row is that evaluation's test number",
}
# The shared reading ``precision``: what the model's training forward ran in (``ResultsFile.training_precision``).
PRECISIONS = {
    "fp32": "model trained in fp32",
    "bf16": "model trained under bf16 autocast (loss and test embeddings in fp32)",
}
VERDICT_MARKS = {HOLDS: "✓ holds", FAILS: "✗ fails", WITHIN_NOISE: "≈ within noise", NOT_RUN: "… not run",
                 SMOKE: "n/a (smoke)"}  # fmt: skip
NO_DEEP_RUNS = "none (no deep-network runs)"


@dataclass(frozen=True)
class PageInputs:
    """Everything one page is made of."""

    paper: PublishedPaper
    frame: pd.DataFrame  # the long form (dml_core.tables.gate.join)
    timing: pd.DataFrame  # dml_core.tables.pages.timing.timing_frame
    loaded: list[LoadedResults]
    plan: Plan
    tolerances: Tolerances
    verdicts: list[ClaimVerdict]
    gaps: KnownGaps
    tier: Tier
    markdown_dir: Path  # where the page lives: links and images are relative to it
    root: Path  # the repository root (for links to its files)
    figures: Mapping[str, Path]  # table id -> its comparison figure
    curves: Mapping[str, Path]  # table id -> its training-curves figure
    refused: Sequence[Refusal] = ()  # results files the gate refused (dml_core.tables.gate.admission)
    gate_notes: Sequence[str] = ()  # what the gate could not check here


def _relative(path: Path, start: Path) -> str:
    return Path(os.path.relpath(path, start)).as_posix()


def _distinct(values: Iterable[str]) -> list[str]:
    return sorted(set(values))


def commits_text(runs: Iterable[ResultsFile | LinearResultsFile]) -> str:
    """The code the runs ran: each distinct commit once, by first use; a long list as its first and last."""
    ordered: dict[str, bool] = {}
    for run in sorted(runs, key=lambda r: r.created):
        for state in git_starts(run.git):
            commit = str(state.get("commit", "unknown"))[:7]
            ordered[commit] = ordered.get(commit, False) or bool(state.get("dirty"))
    names = [f"`{c}`{' (dirty)' if dirty else ''}" for c, dirty in ordered.items()]
    if len(names) <= 3:
        return ", ".join(names) or "none"
    return f"{len(names)} commits, from {names[0]} to {names[-1]} (by first use; each linear run's in its table)"


def starts_text(git: dict) -> str:
    """The commits a run's starts ran, each once by first use, with its number of starts where it had more than one.

    >>> starts_text({"segments": [{"commit": "d3f49b9e"}, {"commit": "d3f49b9e"}, {"commit": "0a0ce3bf"}]})
    '`d3f49b9` (2 starts), `0a0ce3b`'
    """
    starts = Counter(str(state.get("commit", "?"))[:7] for state in git_starts(git))
    return ", ".join(f"`{commit}`" + (f" ({n} starts)" if n > 1 else "") for commit, n in starts.items())


def _protocol_line(results: ResultsFile) -> str:
    protocol = results.evaluation_protocol
    knn, clustering = protocol.get("knn", {}), protocol.get("clustering", {})
    parts = [
        f"{dataset_name(results.dataset)}: {protocol.get('protocol', '?')} retrieval",
        f"self excluded {protocol.get('self_exclusion', '?')}",
        f"L2-normalised {'yes' if protocol.get('normalize') else 'no'}",
    ]
    if knn:
        parts.append(f"Recall@K for K in {knn.get('recall_ks')}")
    if clustering:
        parts.append(
            f"k-means {clustering.get('backend', '?')} ({clustering.get('iterations', '?')} iterations, "
            f"seed {clustering.get('seed', '?')}), NMI {clustering.get('nmi_normalization', '?')}"
        )
    parts.append(PRECISIONS[results.training_precision])  # the shared reading ``precision``, as it ran
    return ", ".join(parts)


def _tolerance_text(tolerances: Tolerances) -> str:
    values = {tolerances.default, *tolerances.metrics.values()}
    if len(values) == 1:
        return f"{tolerances.default:g} points for every metric"
    listed = ", ".join(f"{metric} {value:g}" for metric, value in sorted(tolerances.metrics.items()))
    return f"{listed}; {tolerances.default:g} points for any other metric"


def how_obtained(inputs: PageInputs) -> list[str]:
    """Where the numbers come from: runs, selection, protocol, code, devices, the gate and the legend."""
    runs = [item.results for item in inputs.loaded]
    deep = [r for r in runs if isinstance(r, ResultsFile)]
    linear = [r for r in runs if isinstance(r, LinearResultsFile)]
    key = inputs.paper.paper.key
    lines = [
        "## How the numbers were obtained",
        "",
        f"- Runs planned: {len(inputs.plan.deep_runs)} deep-network runs (reproduce/{key}/), "
        f"{len(inputs.plan.linear_runs)} linear runs (reproduce/{key}/linear/). Results files: {len(runs)} "
        f"({len(deep)} deep, {len(linear)} linear); {'SMOKE' if inputs.tier == Tier.SMOKE else 'full-scale'} runs.",
        "- Selection rule: "
        + (
            "; ".join(SELECTION_RULES.get(rule, rule) for rule in _distinct(r.selection.rule for r in deep))
            or NO_DEEP_RUNS
        ),
        "- Evaluation protocol: " + ("; ".join(_distinct(_protocol_line(r) for r in deep)) or NO_DEEP_RUNS),
    ]
    if linear:
        lines.append(
            "- Linear runs (Table 2 protocol): kNN accuracy (%) as mean ± sample std over random stratified 70/30 "
            "splits; z-score (+ PCA to 150) fitted on the train part; hyper-parameters by k-fold CV on the train "
            "part; the linear runs table says how each was obtained (splits, folds, K rule: test = best K in 1..40 "
            "on the test part, cv = the CV-chosen K; paper grid or THINNED grid)."
        )
    devices = _distinct(r.environment.get("gpu") or f"no GPU ({r.environment.get('device', '?')})" for r in runs)
    lines += [
        "- Code: " + commits_text(runs),
        "- Devices: " + (", ".join(devices) or "none"),
        f"- Gate: the tolerance (reproduce/tolerances.yaml: {_tolerance_text(inputs.tolerances)}), or the measured "
        "spread of a line where that is larger (std over seeds; the standard error over splits for a linear run).",
        f"- {LEGEND} Rows marked *(quoted)* are numbers the authors cite from other works.",
        "",
    ]
    return lines


def summary_section(inputs: PageInputs) -> list[str]:
    """Per table, the row counts; then the claims' verdicts, one line each."""
    counts = table_counts(inputs.paper, inputs.frame, inputs.timing)
    captions = {table.id: table.caption for table in inputs.paper.tables}
    shown = pd.DataFrame(
        {
            "table": counts["table"],
            "caption": [_short(captions[t]) for t in counts["table"]],
            "our runs": [counts_text(line, inputs.tier) for _, line in counts.iterrows()],
            "published only": [
                f"{n} ({q} quoted)" if q else str(n)
                for n, q in zip(counts["published only"], counts["quoted"], strict=True)
            ],
        }
    )
    lines = ["## Summary", "", table_markdown(shown), ""]
    if inputs.verdicts:
        lines += [
            f"Claims of the paper (papers/{inputs.paper.paper.key}/claims.yaml; quoted in full below): "
            f"{verdict_counts(inputs.verdicts)}.",
            "",
            table_markdown(
                pd.DataFrame(
                    {
                        "claim": [v.claim.id for v in inputs.verdicts],
                        "verdict": [VERDICT_MARKS[v.verdict] for v in inputs.verdicts],
                        "on our numbers": [v.detail for v in inputs.verdicts],
                    }
                )
            ),
            "",
        ]
    return lines


def _short(text: str, limit: int = 70) -> str:
    return text if len(text) <= limit else text[: limit - 1].rstrip() + "…"


def published_notes(table: PublishedTable, rows: set[str]) -> list[str]:
    """The transcription's remarks on the published values of the rows we run (misprints, impossible values)."""
    notes = [f"- `{row.id}`: {row.note}" for row in table.rows if row.id in rows and row.note]
    return ["Remarks on the published values:", "", *notes, ""] if notes else []


def known_gap_notes(inputs: PageInputs, table: PublishedTable) -> list[str]:
    """Why the rows marked "why?" differ from the paper (``papers/<key>/known_gaps.yaml``), and what the rows we
    cannot run lack (a quoted baseline, a method not built): every row of a gap is named, run or not."""
    notes = []
    for gap in inputs.gaps.gaps:
        mine = [row for row in table.rows if gap.table == table.id and row.id in gap.rows]
        if mine:
            link = _relative(inputs.root / gap.see.split("#")[0], inputs.markdown_dir)
            anchor = "#" + gap.see.split("#")[1] if "#" in gap.see else ""
            names = ", ".join(row_label(row, with_dataset=True) + (f" {QUOTED}" if row.quoted else "") for row in mine)
            waiver = gap.waiver
            waived = (
                f" **Waived** ({', '.join(waiver.metrics)}; reviewed in {waiver.reviewed_in}, {waiver.reviewed_on}): "
                "the gate does not count these cells against the published number."
                if waiver
                else ""
            )
            notes.append(f"- {names}: {gap.why.strip()} ([more]({link}{anchor})){waived}")
    return ["Known gaps (why?):", "", *notes, ""] if notes else []


def _count(number: int, noun: str) -> str:
    """``number`` and ``noun``, plural unless one.

    >>> _count(1, "reading"), _count(2, "reading")
    ('1 reading', '2 readings')
    """
    return f"{number} {noun}{'' if number == 1 else 's'}"


def rests_on_section(inputs: PageInputs, table: PublishedTable) -> list[str]:
    """The assumptions and readings the runs of ``table`` rest on (reproduce/<key>/assumptions.yaml), folded."""
    assumptions, readings = inputs.plan.rests_on(table.id)
    if not assumptions and not readings:
        return []
    source = _relative(inputs.root / "reproduce" / inputs.paper.paper.key / "assumptions.yaml", inputs.markdown_dir)
    lines = [
        f"<details><summary>What the runs of {table.id} rest on: {_count(len(assumptions), 'assumption')}, "
        f'{_count(len(readings), "reading")} (<a href="{source}">assumptions.yaml</a>)</summary>',
        "",
    ]
    shared = _relative(inputs.root / "reproduce" / SHARED_READINGS_FILE, inputs.markdown_dir)
    for name, default in sorted(readings.items()):
        others = [value for value in inputs.plan.reading_values.get(name, []) if value != default]
        where = f' (every paper\'s, <a href="{shared}">{SHARED_READINGS_FILE}</a>)' if is_shared_reading(name) else ""
        lines.append(
            f"- reading `{name}`{where}: `{default}` (default)"
            + (f"; also runnable: {', '.join(others)}" if others else "")
        )
    lines += [f"- `{key}`: {' '.join(text.split())}" for key, text in assumptions.items()]
    return [*lines, "", "</details>", ""]


def table_section(inputs: PageInputs, table: PublishedTable) -> list[str]:
    """One published table: in the paper's shape with its figures, or one line when nothing of it is run."""
    lines = inputs.frame[inputs.frame["table"] == table.id]
    if table.kind == "training_time":
        return timing_table_section(inputs, table)
    if not table.rows:
        return [f"**{table.id}**: {table.caption} — lost in the text the transcription works from (see its note in "
                f"papers/{inputs.paper.paper.key}/published.yaml).", ""]  # fmt: skip
    if not has_reproduced_number(lines):
        planned = len(set(lines["row"]))
        state = f"not run yet ({planned} of {len(table.rows)} rows have a run planned)" if planned else (
            f"no run of ours targets its {len(table.rows)} rows")  # fmt: skip
        return [f"**{table.id}**: {table.caption} — {state}.", "", *known_gap_notes(inputs, table),
                *rests_on_section(inputs, table)]  # fmt: skip
    shown = paper_shaped(table, lines, inputs.gaps, inputs.markdown_dir, inputs.root)
    parts = [f"## {table.id}: {table.caption}", "", table_markdown(shown), ""]
    parts += known_gap_notes(inputs, table)
    parts += published_notes(table, set(lines["row"]))
    parts += rests_on_section(inputs, table)
    for figure in (inputs.figures.get(table.id), inputs.curves.get(table.id)):
        if figure is not None:
            parts += [f"![{figure.stem}]({_relative(figure, inputs.markdown_dir)})", ""]
    return parts


def timing_table_section(inputs: PageInputs, table: PublishedTable) -> list[str]:
    """The paper's training-time table with our measurement beside each printed method (one line when none of
    its methods has been timed yet)."""
    timed = inputs.timing[inputs.timing["row"].isin([row.id for row in table.rows])]
    if (timed["device"] == ROW_NOT_RUN).all():
        return [f"**{table.id}**: {table.caption} — not timed yet ({len(set(timed['row']))} of {len(table.rows)} "
                "rows have a run planned).", ""]  # fmt: skip
    shown = paper_timing_table(table, inputs.timing)
    return [
        f"## {table.id}: {table.caption}",
        "",
        "The paper's columns, then ours: the device, our speed, its ratio to the paper's, and the training time our "
        "speed gives over the recipe's schedule (training loop only, evaluations excluded).",
        "",
        table_markdown(shown),
        "",
    ]


def training_time_section(inputs: PageInputs) -> list[str]:
    """For a paper that prints no training time: a compact summary of the deep runs there are."""
    if any(table.kind == "training_time" for table in inputs.paper.tables):
        return []
    summary = timing_summary(inputs.timing)
    if summary.empty:
        return ["## Training time", "", "No deep-network runs yet; the paper prints no training time.", ""]
    return [
        "## Training time",
        "",
        "The paper prints no training time; ours, per run:",
        "",
        table_markdown(summary),
        "",
    ]


def claims_section(inputs: PageInputs) -> list[str]:
    """Every claim: the verdict, the quoted sentence, its section and how it is encoded."""
    if not inputs.verdicts:
        return []
    lines = ["## Claims", ""]
    for verdict in inputs.verdicts:
        claim = verdict.claim
        note = f" {claim.note}" if claim.note else ""
        lines.append(
            f"- **{VERDICT_MARKS[verdict.verdict]}** `{claim.id}` (Section {claim.section}): “{claim.quote.strip()}”"
            f"{note} On our numbers: {verdict.detail}."
        )
    return [*lines, ""]


def _other_k_rule(run: LinearResultsFile) -> str:
    """The run's accuracy read under the K rule it was not run under (each split keeps every K's accuracy),
    so the optimistic best-test-K number always stands beside the CV-chosen-K one."""
    other = "cv" if run.protocol.k_rule == "test" else "test"
    mean, std = rescore(run.model_dump(), other)
    return f"{other}: {mean:.2f}" + (f" ± {std:.2f}" if len(run.splits) > 1 else "")


def linear_runs_section(inputs: PageInputs) -> list[str]:
    """One line per linear results file: what it ran (as the paper spells the method), how, how long, which code."""
    runs = sorted(
        (item.results for item in inputs.loaded if isinstance(item.results, LinearResultsFile)),
        key=lambda r: (r.dataset, r.id, r.seed),
    )
    if not runs:
        return []
    lines = []
    for run in runs:
        target = run.targets[0]
        accuracy = f"{run.summary.accuracy:.2f}" + (f" ± {run.summary.accuracy_std:.2f}" if len(run.splits) > 1 else "")
        lines.append(
            {
                "method": find_row(inputs.paper, target.table, target.row).method,
                "data set": dataset_name(run.dataset),
                "plan": run.plan.id,
                "seed": str(run.seed),
                "accuracy": accuracy,
                "other K rule": _other_k_rule(run),
                "how": describe_linear_protocol(run.protocol),
                "split time": readable_duration(run.seconds),
                "commits": starts_text(run.git) or NOT_AVAILABLE,
            }
        )
    return ["## Linear runs (Table 2 protocol)", "", table_markdown(pd.DataFrame(lines)), ""]


def gate_section(inputs: PageInputs) -> list[str]:
    """The results files the gate refused (named, with why: they are no row of any table) and what it could not
    check; nothing when it took every file and checked everything."""
    if not inputs.refused and not inputs.gate_notes:
        return []
    lines = ["## Results gate", ""]
    if inputs.refused:
        lines += [
            f"Refused, shown in no table ({len(inputs.refused)} results file(s); `{DML} tables --check` fails "
            "on them):",
            "",
            *(f"- `{refusal.path.name}`: {refusal.reason}" for refusal in inputs.refused),
            "",
        ]
    lines += [f"Not checked: {note}." for note in inputs.gate_notes]
    return [*lines, ""] if inputs.gate_notes else lines


def render(inputs: PageInputs) -> str:
    """The whole page."""
    info = inputs.paper.paper
    parts = [f"# Reproduction: {info.title} ({info.venue} {info.year})", ""]
    if inputs.tier == Tier.SMOKE:
        parts += [SMOKE_BANNER, ""]
        if any(isinstance(item.results, LinearResultsFile) for item in inputs.loaded):
            parts += [LINEAR_SMOKE_BANNER, ""]
    parts += summary_section(inputs)
    parts += gate_section(inputs)
    parts += how_obtained(inputs)
    for table in inputs.paper.tables:
        parts += table_section(inputs, table)
    parts += training_time_section(inputs)
    parts += claims_section(inputs)
    parts += linear_runs_section(inputs)
    return "\n".join(parts).rstrip("\n") + "\n"
