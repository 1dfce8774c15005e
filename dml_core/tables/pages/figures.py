"""One figure per published table, not per row (matplotlib, Agg backend, one style, the Okabe-Ito colour-blind
safe palette, 800 px wide): published against reproduced over the swept value for a sweep table (its first
metric, usually R@1), grouped bars per metric for any other table; and the training curves (test R@1 at every
evaluation) of the runs behind a table, overlaid. Only tables with a reproduced number get a figure; a curve
with a single evaluation (a smoke run) is not drawn."""

from __future__ import annotations

import math
from collections import defaultdict
from collections.abc import Iterable, Mapping
from pathlib import Path

import matplotlib

matplotlib.use("Agg")  # headless: CI, Docker, the nightly job
import matplotlib.pyplot as plt  # after matplotlib.use: the backend is chosen first
import numpy as np
import pandas as pd
from matplotlib.lines import Line2D

from dml_core.atomic_io import atomic_write
from dml_core.published import PublishedTable
from dml_core.results import ResultsFile
from dml_core.tables.pages.labels import row_label, variant_label
from dml_core.tables.pages.sweeps import SweepPoint, sweep_points
from dml_core.tier import Tier

# Okabe & Ito (2008): distinguishable with every common colour-vision deficiency.
OKABE_ITO = ("#0072B2", "#E69F00", "#009E73", "#CC79A7", "#56B4E9", "#D55E00", "#F0E442", "#000000")
PUBLISHED_COLOUR, REPRODUCED_COLOUR = OKABE_ITO[0], OKABE_ITO[1]
WIDTH_INCHES, DPI = 8.0, 100  # 800 px: readable at README width
STYLE = {
    "font.size": 9,
    "axes.titlesize": 9,
    "axes.spines.top": False,
    "axes.spines.right": False,
    "axes.grid": True,
    "grid.alpha": 0.3,
    "legend.fontsize": 8,
    "legend.frameon": False,
    "axes.prop_cycle": matplotlib.cycler(color=OKABE_ITO),
}
MAX_LEGEND = 12
SMOKE_NOTE = " (SMOKE: not comparable)"


def save_png(figure: plt.Figure, path: Path) -> Path:
    # Fixed metadata: the same numbers give the same bytes (no timestamp), and the write is atomic.
    atomic_write(path, lambda handle: figure.savefig(handle, format="png", dpi=DPI, metadata={"Software": None}))
    plt.close(figure)
    return path


def panel_grid(panels: int, max_columns: int = 3) -> tuple[plt.Figure, list[plt.Axes]]:
    columns = min(max_columns, panels)
    rows = math.ceil(panels / columns)
    figure, axes = plt.subplots(rows, columns, figsize=(WIDTH_INCHES, 3.0 * rows + 0.6), squeeze=False)
    flat = list(axes.flat)
    for spare in flat[panels:]:
        spare.set_visible(False)
    return figure, flat[:panels]


def _measured(lines: pd.DataFrame) -> pd.DataFrame:
    return lines[lines["reproduced"].notna()]


def table_figure(table: PublishedTable, lines: pd.DataFrame, path: Path, tier: Tier) -> Path | None:
    """The table's figure (sweep or grouped bars) from its long-form ``lines``; None when nothing is reproduced."""
    if _measured(lines).empty:
        return None
    with plt.rc_context(STYLE):
        points = sweep_points(table)
        figure = _sweep_figure(table, points, lines) if points else _bars_figure(table, lines)
        note = SMOKE_NOTE if tier == Tier.SMOKE else ""
        figure.suptitle(f"{table.id}: published vs reproduced{note}", fontsize=10, x=0.02, ha="left")
        figure.tight_layout(rect=(0, 0, 1, 0.95))
        return save_png(figure, path)


def _sweep_figure(table: PublishedTable, points: list[SweepPoint], lines: pd.DataFrame) -> plt.Figure:
    """A panel per sweep (gpw: per loss and weighting), a colour per line in it (a method, or a version), the
    published values solid with circles, ours dashed with squares and their measured spread."""
    metric = next(m for m in table.rows[0].metrics)
    default = _measured(lines[(lines["metric"] == metric) & (lines["variant"] == "")]).drop_duplicates("row")
    reproduced = {line.row: (line.reproduced, line.spread) for line in default.itertuples()}
    published = {row.id: row.metrics.get(metric, math.nan) for row in table.rows}
    panels: dict[str, list[SweepPoint]] = defaultdict(list)
    for point in points:
        panels[point.panel].append(point)
    colours = {line: OKABE_ITO[i % len(OKABE_ITO)] for i, line in enumerate(dict.fromkeys(p.line for p in points))}
    figure, axes = panel_grid(len(panels), max_columns=2 if len(panels) >= 4 else 3)
    for ax, (panel, members) in zip(axes, panels.items(), strict=True):
        labels = [label for _, label in sorted({(p.order, p.label) for p in members})]
        position = {label: index for index, label in enumerate(labels)}
        for line in dict.fromkeys(p.line for p in members):
            mine = sorted((p for p in members if p.line == line), key=lambda p: p.order)
            ax.plot([position[p.label] for p in mine], [published[p.row] for p in mine], "o-", color=colours[line])
            ours = [(position[p.label], *reproduced[p.row]) for p in mine if p.row in reproduced]
            if ours:
                x, y, spread = zip(*ours, strict=True)
                ax.errorbar(x, y, yerr=np.nan_to_num(spread), fmt="s--", color=colours[line], capsize=3)
        ax.set_xticks(range(len(labels)), labels, rotation=45 if len(labels) > 5 else 0,
                      ha="right" if len(labels) > 5 else "center")  # fmt: skip
        ax.set_xlabel(members[0].parameter)
        ax.set_ylabel(f"{metric} (%)")
        if panel:
            ax.set_title(panel)
    keys = [Line2D([], [], color=colour, lw=3) for colour in colours.values()]
    styles = [Line2D([], [], color="grey", marker="o", ls="-"), Line2D([], [], color="grey", marker="s", ls="--")]
    figure.legend([*keys, *styles], [*colours, "published", "reproduced (± measured spread)"], loc="upper right",
                  ncols=min(4, len(colours) + 2))  # fmt: skip
    return figure


def _bars_figure(table: PublishedTable, lines: pd.DataFrame) -> plt.Figure:
    """Published and reproduced side by side: one panel over the metrics when a single run is reproduced, else a
    panel per metric with a pair of horizontal bars per run (labels stay readable however many runs)."""
    measured = _measured(lines)
    rows = {row.id: row for row in table.rows}
    several = len({row.dataset for row in table.rows}) > 1
    runs = list(dict.fromkeys(zip(measured["row"], measured["variant"], strict=True)))
    if len(runs) == 1:
        figure, [ax] = panel_grid(1)
        _bar_pairs(ax, measured, list(measured["metric"]), vertical=True)
        ax.set_ylabel("%")
        ax.set_title(" · ".join(filter(None, [row_label(rows[runs[0][0]], several), variant_label(runs[0][1])])))
    else:
        metrics = list(dict.fromkeys(measured["metric"]))
        columns = 1 if len(metrics) == 1 else 2
        panel_rows = math.ceil(len(metrics) / columns)
        size = (WIDTH_INCHES, (0.32 * len(runs) + 1.2) * panel_rows + 0.6)
        figure, axes = plt.subplots(panel_rows, columns, squeeze=False, figsize=size)
        for spare in list(axes.flat)[len(metrics) :]:
            spare.set_visible(False)
        for ax, metric in zip(axes.flat, metrics, strict=False):
            shown = measured[measured["metric"] == metric]
            labels = [
                " · ".join(filter(None, [row_label(rows[r], several), variant_label(v)])) + _protocol_mark(note)
                for r, v, note in zip(shown["row"], shown["variant"], shown["note"], strict=True)
            ]
            _bar_pairs(ax, shown, labels, vertical=False)
            ax.set_xlabel(f"{metric} (%)")
    handles, names = figure.axes[0].get_legend_handles_labels()
    figure.legend(handles, names, loc="upper right", ncols=2)
    return figure


def _protocol_mark(note: object) -> str:
    """A bar's label mark for a line obtained short of the paper's protocol (a linear run's thinned grid, say).

    >>> _protocol_mark("NOT the paper protocol: 30 splits (seeds 0..29), ..."), _protocol_mark(float("nan"))
    (' (NOT the paper protocol)', '')
    """
    return " (NOT the paper protocol)" if str(note).startswith("NOT the paper protocol") else ""


def _bar_pairs(ax: plt.Axes, shown: pd.DataFrame, labels: list[str], vertical: bool) -> None:
    """A published and a reproduced bar per line of ``shown`` (bars start at zero: their length is the value)."""
    position = np.arange(len(shown))
    spread = np.nan_to_num(shown["spread"].to_numpy())
    draw = ax.bar if vertical else ax.barh
    error = {"yerr": spread} if vertical else {"xerr": spread}
    draw(position - 0.2, shown["published"], 0.4, color=PUBLISHED_COLOUR, label="published")
    draw(position + 0.2, shown["reproduced"], 0.4, color=REPRODUCED_COLOUR, capsize=3,
         label="reproduced (± measured spread)", **error)  # fmt: skip
    pad = max(0.3, (2.5 - len(shown)) / 2)  # bars keep their width, centred, when there are few
    if vertical:
        ax.set_xticks(position, labels)
        ax.set_xlim(-0.5 - pad, len(shown) - 0.5 + pad)
    else:
        ax.set_yticks(position, labels, fontsize=8)
        ax.set_ylim(len(shown) - 0.5 + pad, -0.5 - pad)  # the paper's order, top to bottom


def curves_figure(
    table_id: str, runs: Mapping[tuple[str, str], Iterable[ResultsFile]], path: Path, tier: Tier
) -> Path | None:
    """Test R@1 against iteration for every run behind a table (a colour per recipe and reading, a line per
    seed, the selected evaluation starred); None when no run has two evaluations."""
    curves = {
        key: [r for r in sorted(group, key=lambda r: r.seed) if sum("R@1" in e.metrics for e in r.evaluations) > 1]
        for key, group in sorted(runs.items())
    }
    curves = {key: group for key, group in curves.items() if group}
    if not curves:
        return None
    with plt.rc_context(STYLE):
        figure, [ax] = panel_grid(1)
        for colour, ((recipe, variant), group) in zip(OKABE_ITO * 16, curves.items(), strict=False):
            for index, results in enumerate(group):
                points = [(e.iteration, e.metrics["R@1"]) for e in results.evaluations if "R@1" in e.metrics]
                name = " · ".join(filter(None, [recipe, variant_label(variant)]))
                ax.plot(*zip(*points, strict=True), "-", color=colour, alpha=0.8, label=name if index == 0 else None)
                if "R@1" in results.selection.metrics:
                    ax.plot(results.selection.iteration, results.selection.metrics["R@1"], "*", color=colour, ms=9)
        ax.set_xlabel("iteration")
        ax.set_ylabel("test R@1 (%)")
        seeds = sum(len(group) for group in curves.values())
        ax.set_title(
            f"{table_id}: R@1 during training, {seeds} runs (* selected){SMOKE_NOTE if tier == Tier.SMOKE else ''}"
        )
        if len(curves) <= MAX_LEGEND:
            ax.legend(loc="lower right")
        figure.tight_layout()
        return save_png(figure, path)
