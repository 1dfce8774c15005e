"""One small trend figure per paper and tier from the nightly history: each line's headline metric (R@1, or the
accuracy of anml's Table 2) over the nightlies, in the figures' style. Full-scale numbers are drawn as the gap to
the published number (0 = as printed), smoke numbers as they are (they are not comparable with the paper); a
nightly that failed is marked on the axis."""

from __future__ import annotations

from pathlib import Path

import pandas as pd

from dml_core.tables.nightly.history import nightly_folder
from dml_core.tables.pages.figures import OKABE_ITO, STYLE, WIDTH_INCHES, plt, save_png

HEADLINE_METRICS = ("R@1", "accuracy")
MAX_LINES = 8  # the most lines drawn in colour with a legend; more are drawn thin and grey
FAILED_COLOUR = OKABE_ITO[5]


def trend_path(tables_root: Path, tier: str, key: str) -> Path:
    return nightly_folder(tables_root) / "trends" / f"{tier}-{key}.png"


def draw_trends(history: pd.DataFrame, tier: str, tables_root: Path) -> list[Path]:
    """Draw ``<tables>/nightly/trends/<tier>-<paper>.png`` for every paper of ``tier`` with a measured headline
    line in at least two nightlies; return the files written."""
    mine = history[(history["tier"] == tier) & history["metric"].isin(HEADLINE_METRICS) & history["value"].notna()]
    order = mine.drop_duplicates("nightly").sort_values("started", kind="stable")
    if len(order) < 2:
        return []
    position = {name: index for index, name in enumerate(order["nightly"])}
    failed = [position[name] for name, passed in zip(order["nightly"], order["passed"], strict=True) if not passed]
    written = []
    for key, lines in mine.groupby("paper", sort=True):
        if lines["nightly"].nunique() < 2:
            continue
        with plt.rc_context(STYLE):
            figure, axes = plt.subplots(figsize=(WIDTH_INCHES, 3.2))
            series = list(lines.groupby("line", sort=True))
            for index, (name, points) in enumerate(series):
                points = points.sort_values("started", kind="stable")
                y = points["value"] if tier == "smoke" else points["value"] - points["published"]
                x = points["nightly"].map(position)
                if len(series) <= MAX_LINES:
                    axes.plot(x, y, marker="o", markersize=3, label=name, color=OKABE_ITO[index % len(OKABE_ITO)])
                else:
                    axes.plot(x, y, color="0.6", linewidth=0.8, alpha=0.7)
            if failed:
                axes.scatter(failed, [axes.get_ylim()[0]] * len(failed), marker="x", color=FAILED_COLOUR,
                             label="nightly failed", zorder=3, clip_on=False)  # fmt: skip
            if tier != "smoke":
                axes.axhline(0.0, color="0.3", linewidth=0.8)
            axes.set_xticks(range(len(order)), list(order["nightly"]), rotation=30, ha="right")
            metric = " / ".join(sorted(set(lines["metric"])))
            what = f"{metric} (smoke: not comparable with the paper)" if tier == "smoke" else f"{metric} − published"
            axes.set_ylabel(what)
            axes.set_title(f"{key}: {what}, per nightly ({len(series)} lines)")
            if len(series) <= MAX_LINES or failed:
                axes.legend(loc="best")
            figure.tight_layout()
            written.append(save_png(figure, trend_path(tables_root, tier, str(key))))
    return written
