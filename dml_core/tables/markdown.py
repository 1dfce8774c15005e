"""Render one paper's reproduction as Markdown: a header saying how the numbers were obtained, one table per
published table (published, reproduced, delta, status per metric), the training-time table, and the plots."""

from __future__ import annotations

import math
from collections.abc import Iterable, Mapping
from pathlib import Path

import pandas as pd

from dml_core.linear.protocol import rescore
from dml_core.linear.results_file import describe_linear_protocol
from dml_core.provenance import git_starts
from dml_core.published import PublishedPaper, PublishedTable
from dml_core.results import LinearResultsFile, ResultsFile
from dml_core.tables.join import LoadedResults
from dml_core.tables.tolerances import Tolerances

SMOKE_BANNER = (
    "> **Smoke run: these numbers are NOT comparable with the paper.** They come from the embedded glyph "
    "dataset, random initialisation, small images and a few iterations on the CPU; they only show that every "
    "recipe runs end to end. The status column compares them with the published numbers anyway, mechanically."
)

LINEAR_SMOKE_BANNER = (
    "> The linear (Table 2) smoke lines use the real data set but only a few splits, a grid thinned to about "
    "one point and a short solver budget (see their note column): not comparable with the paper either."
)

SELECTION_RULES = {
    "best_r1": "best_r1: the evaluation with the best test R@1 over training (earliest on ties); every metric "
    "of the row is taken from that one evaluation",
    "final": "final: the last evaluation of the run",
}

NOT_AVAILABLE = "—"
# The selection-rule and protocol lines of a paper whose results are all linear (anml Table 2) or none.
NO_DEEP_RUNS = "none (no deep-network runs)"


def _published(value: float, std: float) -> str:
    """As printed (``67.0``, not ``67``), with the published ± when the paper prints one.

    >>> _published(99.89, 2.09), _published(67.0, float("nan"))
    ('99.89 ± 2.09', '67.0')
    """
    return str(float(value)) if math.isnan(std) else f"{float(value)} ± {float(std)}"


def _reproduced(mean: float, std: float) -> str:
    """``55.10`` for one seed, ``55.10 ± 0.80`` for several, a dash when not run."""
    if math.isnan(mean):
        return NOT_AVAILABLE
    return f"{mean:.2f}" if math.isnan(std) else f"{mean:.2f} ± {std:.2f}"


def _protocol_line(item: LoadedResults) -> str:
    results = item.results
    protocol = results.evaluation_protocol
    knn = protocol.get("knn", {})
    clustering = protocol.get("clustering", {})
    parts = [
        f"{results.dataset}: {protocol.get('protocol', '?')} retrieval",
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
    return ", ".join(parts)


def _distinct(values: Iterable[str]) -> list[str]:
    return sorted(set(values))


def _commit_label(git_state: dict) -> str:
    """A commit as the header lists it (a resumed run lists the commit of each start, its ``segments``).

    >>> _commit_label({"commit": "0123456789abcdef", "dirty": True})
    '`0123456789ab` (dirty)'
    """
    return f"`{git_state.get('commit', 'unknown')[:12]}`{' (dirty)' if git_state.get('dirty') else ''}"


def header(
    paper: PublishedPaper,
    loaded: list[LoadedResults],
    tolerances: Tolerances,
    smoke: bool,
    unplanned_rows: int,
    recipes: int,
) -> str:
    """Title, smoke banner, and where the numbers come from: runs, selection, protocol, commits, devices."""
    info = paper.paper
    lines = [f"# Reproduction: {info.title} ({info.venue} {info.year})", ""]
    if smoke:
        lines += [SMOKE_BANNER, ""]
        if any(isinstance(item.results, LinearResultsFile) for item in loaded):
            lines += [LINEAR_SMOKE_BANNER, ""]
    runs = [item.results for item in loaded]
    deep = [item for item in loaded if isinstance(item.results, ResultsFile)]
    linear = [r for r in runs if isinstance(r, LinearResultsFile)]
    commits = _distinct(_commit_label(state) for r in runs for state in git_starts(r.git))
    devices = _distinct(r.environment.get("gpu") or f"no GPU ({r.environment.get('device', '?')})" for r in runs)
    rules = _distinct(item.results.selection.rule for item in deep)
    tolerance_text = ", ".join(f"{metric} {value:g}" for metric, value in sorted(tolerances.metrics.items()))
    lines += [
        f"- Paper key: `{info.key}`; recipes under reproduce/{info.key}/: {recipes}; results files: {len(runs)} "
        f"(of {len({r.run_id for r in runs})} recipes); {'SMOKE' if smoke else 'full-scale'} runs.",
        "- Selection rule: " + ("; ".join(SELECTION_RULES.get(rule, rule) for rule in rules) or NO_DEEP_RUNS),
        "- Evaluation protocol: " + ("; ".join(_distinct(_protocol_line(item) for item in deep)) or NO_DEEP_RUNS),
    ]
    if linear:
        lines.append(
            f"- Linear runs (Table 2 protocol, {len(linear)} results files): kNN accuracy (%) as mean ± sample std "
            "over random stratified 70/30 splits; z-score (+ PCA to 150) fitted on the train part; hyper-parameters "
            "by k-fold CV on the train part; the note column says how each line was obtained (splits, folds, K "
            "rule: test = best K in 1..40 on the test part, cv = the CV-chosen K; paper grid or THINNED grid)."
        )
    lines += [
        "- Git commit(s): " + (", ".join(commits) or "none"),
        "- GPU(s): " + (", ".join(devices) or "none"),
        f'- Status: |reproduced - published| within the tolerance (points) is "within tolerance", else '
        f'"below"/"above"; tolerances: default {tolerances.default:g}'
        + (f", {tolerance_text}" if tolerance_text else "")
        + ". Reproduced values are mean ± sample std over seeds when there are several.",
        f"- Published rows no recipe targets (not shown): {unplanned_rows}.",
        "",
    ]
    return "\n".join(lines)


def comparison_table(frame: pd.DataFrame) -> str:
    """The Markdown (pipe) table of one published table's lines from :func:`dml_core.tables.join.join`."""
    shown = pd.DataFrame(
        {
            "row": frame["row"],
            "method": frame["method"],
            "dataset": frame["dataset"],
            "recipe": frame["recipe"],
            "seeds": frame["seeds"].replace("", NOT_AVAILABLE),
            "metric": frame["metric"],
            "published": [_published(v, s) for v, s in zip(frame["published"], frame["published_std"], strict=True)],
            "reproduced": [_reproduced(m, s) for m, s in zip(frame["reproduced"], frame["std"], strict=True)],
            "delta": [NOT_AVAILABLE if math.isnan(d) else f"{d:+.2f}" for d in frame["delta"]],
            "status": frame["status"],
        }
    )
    if frame["note"].fillna("").astype(bool).any():  # only tables with linear lines get the column
        shown["note"] = frame["note"].fillna("").to_numpy()
    return shown.to_markdown(index=False, disable_numparse=True)


def published_notes(table: PublishedTable, shown_rows: set[str]) -> list[str]:
    """The transcription's remarks on the published values of the rows shown (misprints, impossible values),
    as a list under the table; none if those rows have none."""
    notes = [f"- `{row.id}`: {row.note}" for row in table.rows if row.id in shown_rows and row.note]
    return ["Remarks on the published values:", "", *notes, ""] if notes else []


def _over_splits(run: LinearResultsFile, mean: float, std: float) -> str:
    """A linear run's mean ± std over its splits (no ± for a single split)."""
    return _reproduced(mean, std if len(run.splits) > 1 else math.nan)


def _other_k_rule(run: LinearResultsFile) -> str:
    """The run's accuracy read under the K rule it was not run under (each split keeps every K's accuracy),
    so the optimistic best-test-K number always stands beside the CV-chosen-K one."""
    other = "cv" if run.protocol.k_rule == "test" else "test"
    return f"{other}: {_over_splits(run, *rescore(run.model_dump(), other))}"


def linear_runs_table(loaded: Iterable[LoadedResults]) -> str:
    """One line per linear results file: what it ran, how (and its accuracy under the other K rule), how long,
    from which commit."""
    lines = [
        {
            "run": r.id,
            "dataset": r.dataset,
            "method": r.method_name,
            "seed": str(r.seed),
            "plan": r.plan.id,
            "accuracy": _over_splits(r, r.summary.accuracy, r.summary.accuracy_std),
            "other K rule": _other_k_rule(r),
            "how": describe_linear_protocol(r.protocol),
            "seconds": f"{r.seconds:.3g}",
            "commit(s)": ", ".join(_commit_label(state) for state in git_starts(r.git)),
        }
        for r in sorted(
            (item.results for item in loaded if isinstance(item.results, LinearResultsFile)),
            key=lambda r: (r.dataset, r.id, r.seed),
        )
    ]
    return pd.DataFrame(lines).to_markdown(index=False, disable_numparse=True) if lines else ""


def timing_table(timing: pd.DataFrame) -> str:
    """Published iterations/s and hours beside ours, with the device each run used."""
    shown = timing.copy()
    for column in ("published it/s", "ours it/s", "published hours", "ours hours"):
        shown[column] = [NOT_AVAILABLE if math.isnan(value) else f"{value:.3g}" for value in timing[column]]
    shown["iterations"] = [NOT_AVAILABLE if math.isnan(v) else str(int(v)) for v in timing["iterations"]]
    shown["seeds"] = shown["seeds"].replace("", NOT_AVAILABLE)
    return shown.to_markdown(index=False, disable_numparse=True)


def _images(paths: Iterable[Path], relative_to: Path) -> list[str]:
    return [f"![{path.stem}]({path.relative_to(relative_to).as_posix()})" for path in paths]


def render(
    paper: PublishedPaper,
    frame: pd.DataFrame,
    timing: pd.DataFrame,
    loaded: list[LoadedResults],
    tolerances: Tolerances,
    *,
    smoke: bool,
    unplanned_rows: int = 0,
    recipes: int = 0,
    recall_plots: Mapping[tuple[str, str, str], Path] | None = None,
    curve_plots: Mapping[str, Path] | None = None,
    markdown_dir: Path | None = None,
) -> str:
    """The whole ``tables/<key>.md``; plot paths are linked relative to ``markdown_dir``."""
    parts = [header(paper, loaded, tolerances, smoke, unplanned_rows, recipes)]
    for table in paper.tables:
        lines = frame[frame["table"] == table.id]
        if lines.empty:
            continue
        parts += [f"## {table.id}: {table.caption}", "", comparison_table(lines), ""]
        parts += published_notes(table, set(lines["row"]))
        plots = [path for key, path in sorted((recall_plots or {}).items()) if key[0] == table.id]
        if plots and markdown_dir is not None:
            parts += [*_images(plots, markdown_dir), ""]
    if frame.empty:
        parts += ["No recipe targets a row of this paper yet, and no results exist.", ""]
    if not timing.empty:
        parts += ["## Training time", "", timing_table(timing), ""]
    linear = linear_runs_table(loaded)
    if linear:
        parts += ["## Linear runs (Table 2 protocol)", "", linear, ""]
    if curve_plots and markdown_dir is not None:
        parts += ["## Training curves", "", *_images((curve_plots[k] for k in sorted(curve_plots)), markdown_dir), ""]
    return "\n".join(parts)
