"""Plots beside the tables (matplotlib, Agg backend: no display needed): Recall@K published vs reproduced per
target row, and each recipe's training curve (test R@1 at every evaluation, one line per seed)."""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping
from pathlib import Path

import matplotlib

matplotlib.use("Agg")  # headless: CI, Docker, the nightly job
import matplotlib.pyplot as plt  # after matplotlib.use: the backend is chosen first
import numpy as np
import pandas as pd

from dml_core.atomic_io import atomic_write
from dml_core.results import ResultsFile

_RECALL = re.compile(r"R@([0-9]+)")


def _save(figure: plt.Figure, path: Path) -> Path:
    # Fixed metadata: the same numbers give the same bytes (no timestamp), and the write is atomic.
    atomic_write(path, lambda handle: figure.savefig(handle, format="png", dpi=100, metadata={"Software": None}))
    plt.close(figure)
    return path


def recall_points(lines: pd.DataFrame) -> tuple[list[int], list[float], list[float], list[float]]:
    """K, published, reproduced mean and std of a row's Recall@K lines, sorted by K."""
    recall = lines[lines["metric"].str.fullmatch(_RECALL.pattern)]
    ks = [int(_RECALL.fullmatch(metric).group(1)) for metric in recall["metric"]]
    order = np.argsort(ks)
    pick = lambda column: [float(recall[column].iloc[i]) for i in order]  # noqa: E731
    return [ks[i] for i in order], pick("published"), pick("reproduced"), pick("std")


def recall_plots(frame: pd.DataFrame, folder: Path, smoke: bool) -> dict[tuple[str, str, str], Path]:
    """One ``recall-<table>-<row>-<recipe>.png`` per row with reproduced Recall@K numbers."""
    written: dict[tuple[str, str, str], Path] = {}
    for (table_id, row_id, recipe), lines in frame.groupby(["table", "row", "recipe"], sort=True):
        ks, published, reproduced, std = recall_points(lines)
        if len(ks) == 0 or all(np.isnan(reproduced)):
            continue
        figure, axes = plt.subplots(figsize=(5, 3.5))
        axes.plot(ks, published, "o-", label="published")
        axes.errorbar(ks, reproduced, yerr=np.nan_to_num(std), fmt="s--", capsize=3, label="reproduced")
        axes.set_xscale("log", base=2 if max(ks) <= 64 else 10)
        axes.set_xticks(ks, [str(k) for k in ks])
        axes.set_xlabel("K")
        axes.set_ylabel("Recall@K (%)")
        axes.set_title(f"{table_id} {row_id} ({recipe}){' SMOKE, not comparable' if smoke else ''}", fontsize=9)
        axes.legend()
        figure.tight_layout()
        written[(table_id, row_id, recipe)] = _save(figure, folder / f"recall-{table_id}-{row_id}-{recipe}.png")
    return written


def curve_plots(runs_by_recipe: Mapping[str, Iterable[ResultsFile]], folder: Path, smoke: bool) -> dict[str, Path]:
    """One ``curve-<recipe>.png`` per recipe: test R@1 against iteration, a line per seed, the selection marked."""
    written: dict[str, Path] = {}
    for recipe, runs in sorted(runs_by_recipe.items()):
        runs = sorted(runs, key=lambda r: r.seed)
        if not any("R@1" in e.metrics for r in runs for e in r.evaluations):
            continue
        figure, axes = plt.subplots(figsize=(5, 3.5))
        for results in runs:
            points = [(e.iteration, e.metrics["R@1"]) for e in results.evaluations if "R@1" in e.metrics]
            axes.plot(*zip(*points, strict=True), "o-", label=f"seed {results.seed}")
            if "R@1" in results.selection.metrics:
                axes.plot(results.selection.iteration, results.selection.metrics["R@1"], "k*", markersize=10)
        axes.set_xlabel("iteration")
        axes.set_ylabel("test R@1 (%)")
        axes.set_title(f"{recipe}: R@1 during training (* selected){' SMOKE' if smoke else ''}", fontsize=9)
        axes.legend()
        figure.tight_layout()
        written[recipe] = _save(figure, folder / f"curve-{recipe}.png")
    return written
