"""The fair table's one figure, ``fair.png`` beside the page: per dataset that ran, each method's mean test R@1 with
its sample std over seeds (the paper methods, the classic baselines and the controls each in a colour), and the
reference's mean ± std as a band (the classic baseline picked on validation), so a method's distance from it reads at
a glance (the suite's figure style:
``dml_core.tables.pages.figures``)."""

from __future__ import annotations

from pathlib import Path

import numpy as np

from dml_core.tables.fair.study import FairTables
from dml_core.tables.gate.join import pooled
from dml_core.tables.pages.figures import OKABE_ITO, STYLE, panel_grid, plt, save_png
from dml_core.tables.pages.labels import dataset_name
from dml_core.tier import Tier

PAPER_COLOUR, BASELINE_COLOUR, BAND_COLOUR, CONTROL_COLOUR = OKABE_ITO[1], OKABE_ITO[0], OKABE_ITO[2], OKABE_ITO[3]
COLOURS = {"paper": PAPER_COLOUR, "baseline": BASELINE_COLOUR, "control": CONTROL_COLOUR}


def _std(values: list[float]) -> float:
    """The sample std over seeds; an error bar of 0 for one seed."""
    return float(np.nan_to_num(pooled(values)[1]))


def fair_figure(tables: FairTables, path: Path) -> Path | None:
    """Draw the figure; None when no method ran on any dataset."""
    sections = [section for section in tables.sections if any(line.values("R@1") for line in section.lines)]
    if not sections:
        return None
    with plt.rc_context(STYLE):
        figure, axes = panel_grid(len(sections), max_columns=3)
        for ax, section in zip(axes, sections, strict=True):
            shown = [line for line in section.lines if line.values("R@1")]
            position = np.arange(len(shown))
            means = [line.mean("R@1") for line in shown]
            spreads = [_std(line.values("R@1")) for line in shown]
            colours = [COLOURS[line.kind] for line in shown]
            ax.barh(position, means, xerr=spreads, color=colours, capsize=3, height=0.6)
            if section.reference is not None:
                mean, spread = section.reference.mean("R@1"), _std(section.reference.values("R@1"))
                ax.axvspan(mean - spread, mean + spread, color=BAND_COLOUR, alpha=0.3, lw=0, zorder=3)
                ax.axvline(mean, color=BAND_COLOUR, lw=1, zorder=3)
            ax.set_yticks(position, [f"{line.method} (n={len(line.values('R@1'))})" for line in shown], fontsize=8)
            ax.set_ylim(len(shown) - 0.5, -0.5)  # the study's order, top to bottom
            ax.set_xlabel("test R@1 (%), mean ± std over seeds")
            ax.set_title(dataset_name(section.dataset))
        handles = [plt.Rectangle((0, 0), 1, 1, color=c) for c in (PAPER_COLOUR, BASELINE_COLOUR, CONTROL_COLOUR)]
        handles.append(plt.Rectangle((0, 0), 1, 1, color=BAND_COLOUR, alpha=0.4))
        labels = [
            "paper method",
            "classic baseline",
            "control (same batches)",
            "reference (best baseline on validation): mean ± std",
        ]
        figure.legend(handles, labels, loc="lower center", ncols=4)
        note = " (MINI tier: glyphs, not the study's numbers)" if tables.tier == Tier.MINI else ""
        figure.suptitle(f"The fair comparison: R@1 under one protocol{note}", fontsize=10, x=0.02, ha="left")
        figure.tight_layout(rect=(0, 0.07, 1, 0.94))
        return save_png(figure, path)
