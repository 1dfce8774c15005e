"""The mini tier's page, ``tables/mini/<key>.md``: does each recipe of the paper's headline comparison learn, and
does the paper's claimed ordering hold at that scale?

Per run (recipe x seeds, from ``results/mini/<key>/``): R@1 and NMI before the first update (untrained) and at
the end (trained), mean ± std over seeds, and the gain in R@1. Then the comparison of ``reproduce/<key>/mini.yaml``:
the proposed run's trained R@1 against each baseline's. The banner says plainly that this is a small-scale check
of learning, not a reproduction of the paper's numbers.
"""

from __future__ import annotations

import statistics
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

from dml_core.atomic_io import atomic_write_text
from dml_core.command_line import DML
from dml_core.host_load import shared_host_note
from dml_core.output_paths import results_folder, tables_markdown
from dml_core.recipes.mini import MiniComparison, load_mini_comparison, mini_file
from dml_core.results import HostLoadRecord, ResultsFile, load_results
from dml_core.tier import Tier

# R@1 points (mean over seeds) a run must gain over its untrained evaluation to count as learning.
LEARNING_GAIN = 15.0

BANNER = (
    "> **Mini tier: a small-scale check that each recipe learns, NOT a reproduction of the paper.** Every run "
    "trains from random weights on the generated `embedded_mini` glyphs (47 training and 47 other test "
    "classes: even code points train, odd ones test), with small images, a narrowed backbone of the recipe's "
    "family and a few hundred iterations, on "
    "the CPU; everything else (loss, sampler, parameter groups and their multipliers, BN freezing, warm-up, "
    "schedule shape, head) is the recipe's. Numbers are R@1 and NMI (%) on the test classes before the first "
    "update and after the last, mean ± std over seeds. The paper's numbers are not comparable with these, and an "
    "ordering that holds or fails here says nothing about the paper's scale."
)
SHOWS = (
    "**What this shows.** That the recipe as pinned learns: the loss reaches the embedding, every parameter group "
    f"that should train does, the sampler's batches carry positives, the schedule does not stop learning. A run "
    f"that gains fewer than {LEARNING_GAIN:g} R@1 points is flagged. **What it does not show.** How the method "
    "compares at the paper's scale (pretrained weights, real images, full-width backbones, tens of thousands of "
    "iterations): the ordering row is a check of direction at this scale only, and its margin is within the noise "
    "of a few seeds unless the std says otherwise."
)
FLAGGED_NOTE = (
    'Why a flagged run falls short, and what it does from a start pretrained on other glyphs (docs/tiers.md, "A '
    "pretrained start\"), is measured in the paper's notes, `papers/{key}/method.md`."
)
MACHINE_NOTE = (
    "Trained on: {machines}. Another CPU's float kernels round otherwise, and a run from random weights amplifies "
    "that: the same runs on another machine moved a seed's trained R@1 by up to 15 points, and a gain near the "
    'bar can fall on either side of it (docs/tiers.md, "Another CPU").'
)
GLYPH_START_NOTE = (
    "> Rows named `~start=glyph-pretrained` start instead from the backbone pretrained on other glyphs (a diagnostic "
    'beside the random start: docs/tiers.md, "A pretrained start"); their untrained R@1 is that start\'s, and the '
    f"{LEARNING_GAIN:g}-point bar, which is the random start's, is not theirs."
)


@dataclass(frozen=True)
class MiniRow:
    """One run (id and readings) over its seeds."""

    run_name: str
    seeds: tuple[int, ...]
    untrained_r1: tuple[float, ...]
    trained_r1: tuple[float, ...]
    untrained_nmi: tuple[float, ...]
    trained_nmi: tuple[float, ...]
    backbone: str
    width: float
    image_size: int | None
    iterations: int
    train_seconds: tuple[float, ...]
    start: str = "random"  # the backbone's start: "random" (the tier's) or "glyph-pretrained" (a diagnostic)
    host_loads: tuple[HostLoadRecord | None, ...] = ()  # per seed; None: not recorded
    machines: tuple[str, ...] = ()  # per seed, ``machine_label``

    @property
    def gain(self) -> float:
        """Mean trained R@1 minus mean untrained R@1, in points."""
        return statistics.fmean(self.trained_r1) - statistics.fmean(self.untrained_r1)

    @property
    def learns(self) -> bool:
        return self.gain >= LEARNING_GAIN

    @property
    def flagged(self) -> bool:
        """Under the bar from random weights; a glyph-pretrained start begins near R@1 80 and is not held to it."""
        return self.start == "random" and not self.learns


@dataclass(frozen=True)
class Ordering:
    """The proposed run against one baseline at this scale: trained R@1, mean over seeds."""

    proposed: MiniRow
    baseline: MiniRow

    @property
    def difference(self) -> float:
        return statistics.fmean(self.proposed.trained_r1) - statistics.fmean(self.baseline.trained_r1)

    @property
    def holds(self) -> bool:
        return self.difference > 0

    @property
    def runs_that_did_not_learn(self) -> list[str]:
        """The compared runs whose gain is under the bar: an ordering against a run that did not learn checks
        nothing about the methods."""
        return [row.run_name for row in (self.proposed, self.baseline) if not row.learns]

    @property
    def within_spread(self) -> bool:
        """The difference is smaller than the larger of the two runs' std over seeds."""
        spreads = [_std(self.proposed.trained_r1), _std(self.baseline.trained_r1)]
        return abs(self.difference) < max(spreads)


@dataclass(frozen=True)
class MiniPage:
    """What ``build_mini_page`` wrote: the page and its rows."""

    markdown_path: Path
    rows: list[MiniRow]
    orderings: list[Ordering]


def _std(values: Sequence[float]) -> float:
    return statistics.stdev(values) if len(values) > 1 else 0.0


def mean_std(values: Sequence[float], places: int = 1) -> str:
    """``mean ± std`` (sample std over seeds) to ``places`` decimals, or just the value for one seed.

    >>> mean_std([10.0, 12.0, 14.0]), mean_std([3.25]), mean_std([]), mean_std([0.38, 0.41], places=2)
    ('12.0 ± 2.0', '3.2', '—', '0.40 ± 0.02')
    """
    if not values:
        return "—"
    mean = statistics.fmean(values)
    return f"{mean:.{places}f} ± {_std(values):.{places}f}" if len(values) > 1 else f"{mean:.{places}f}"


def mini_results(results_root: Path, key: str) -> list[ResultsFile]:
    """The mini tier's results files of ``key`` (deep runs marked mini), in name order."""
    folder = results_folder(results_root, key, Tier.MINI)
    loaded = [load_results(path) for path in sorted(folder.glob("*.json"))] if folder.is_dir() else []
    return [results for results in loaded if isinstance(results, ResultsFile) and results.mini]


def summarize_runs(results: Sequence[ResultsFile]) -> list[MiniRow]:
    """One row per run name, its seeds in order; a file without an untrained evaluation is left out."""
    groups: dict[str, list[ResultsFile]] = {}
    for item in results:
        if item.untrained is not None:
            variant = item.recipe.content.get("variant")
            name = f"{item.recipe.id}~{variant}" if variant else item.recipe.id
            start = _start(item)
            if start != "random":
                name += f"~start={start}"
            groups.setdefault(name, []).append(item)
    rows = []
    for name, items in groups.items():
        items = sorted(items, key=lambda item: item.seed)
        transforms = items[0].recipe.content.get("data", {}).get("transforms", {})
        rows.append(
            MiniRow(
                run_name=name,
                seeds=tuple(item.seed for item in items),
                untrained_r1=tuple(item.untrained.metrics["R@1"] for item in items),
                trained_r1=tuple(item.evaluations[-1].metrics["R@1"] for item in items),
                untrained_nmi=tuple(item.untrained.metrics["NMI"] for item in items if "NMI" in item.untrained.metrics),
                trained_nmi=tuple(
                    item.evaluations[-1].metrics["NMI"] for item in items if "NMI" in item.evaluations[-1].metrics
                ),
                backbone=items[0].backbone,
                width=items[0].backbone_width,
                image_size=transforms.get("crop_size"),
                iterations=items[0].timing.iterations,
                train_seconds=tuple(item.timing.train_seconds for item in items),
                host_loads=tuple(item.timing.host_load for item in items),
                machines=tuple(machine_label(item.environment) for item in items),
                start=_start(items[0]),
            )
        )
    return rows


def train_time(seconds: Sequence[float], host_loads: Sequence[HostLoadRecord | None]) -> str:
    """The mean train time a seed, flagged where a seed's host was shared with other work (its time is then not
    the recipe's alone).

    >>> loaded = HostLoadRecord(cpus=2, samples=3, mean=5.1, max=6.0)
    >>> train_time((200.0, 400.0), (None, loaded))
    '300 s ⚠ host shared (load 5.1 on 2 CPUs)'
    """
    return f"{statistics.fmean(seconds):.0f} s {shared_host_note(host_loads)}".rstrip()


def machine_label(environment: dict) -> str:
    """The CPU a run trained on, as its results file names it: model, vector extension, torch threads.

    >>> machine_label({"cpu": "AMD EPYC", "cpu_capability": "AVX2", "cpu_threads": 1})
    'AMD EPYC (AVX2, 1 thread)'
    >>> machine_label({})
    'a CPU not recorded'
    """
    if not environment.get("cpu"):
        return "a CPU not recorded"
    threads = environment.get("cpu_threads")
    details = [environment.get("cpu_capability"), f"{threads} thread{'' if threads == 1 else 's'}" if threads else None]
    details = ", ".join(filter(None, details))
    return f"{environment['cpu']} ({details})" if details else environment["cpu"]


def _start(results: ResultsFile) -> str:
    """Where the run's backbone started: "glyph-pretrained", or "random" (every other request, as the tier's)."""
    return "glyph-pretrained" if results.weights.get("requested") == "glyph-pretrained" else "random"


def orderings(rows: Sequence[MiniRow], comparison: MiniComparison) -> list[Ordering]:
    """The proposed run against each baseline, where both have results."""
    by_name = {row.run_name: row for row in rows}
    proposed = by_name.get(comparison.proposed)
    if proposed is None:
        return []
    return [Ordering(proposed, by_name[baseline]) for baseline in comparison.baselines if baseline in by_name]


BACKBONE_NAMES = {"bn_inception": "BN-Inception", "googlenet": "GoogLeNet", "resnet50": "ResNet-50"}


def backbone_label(backbone: str, width: float) -> str:
    """The backbone as the page names it, with its width when narrowed.

    >>> backbone_label("bn_inception", 0.25), backbone_label("resnet50", 1.0)
    ('BN-Inception, 1/4 width', 'ResNet-50')
    """
    name = BACKBONE_NAMES.get(backbone, backbone)
    return name if width == 1.0 else f"{name}, 1/{round(1 / width)} width"


def _role(name: str, comparison: MiniComparison | None) -> str:
    if comparison is None:
        return ""
    return "proposed" if name == comparison.proposed else "baseline" if name in comparison.baselines else "other"


def mini_markdown(key: str, rows: Sequence[MiniRow], comparison: MiniComparison | None, source: str) -> str:
    """The page: banner, per-run table, the headline ordering and what the tier shows and does not."""
    lines = [f"# {key}: mini tier (small-scale learning check)", "", BANNER, ""]
    if any(row.start != "random" for row in rows):
        lines += [GLYPH_START_NOTE, ""]
    if not rows:
        lines += [f"No mini results yet: `{DML} reproduce {key} --mini` trains them.", ""]
    else:
        lines += [
            "| Run | Role | Backbone | Image | Iterations | Seeds | R@1 untrained | R@1 trained | Gain (R@1) "
            "| NMI untrained | NMI trained | Train time / seed |",
            "|---|---|---|---|---|---|---|---|---|---|---|---|",
        ]
        for row in rows:
            flag = f" ⚠ below {LEARNING_GAIN:g}" if row.flagged else ""
            image = f"{row.image_size} px" if row.image_size else "—"
            lines.append(
                f"| {row.run_name} | {_role(row.run_name, comparison)} | {backbone_label(row.backbone, row.width)}"
                f"{', glyph-pretrained' if row.start != 'random' else ''} "
                f"| {image} | {row.iterations} | {', '.join(map(str, row.seeds))} "
                f"| {mean_std(row.untrained_r1)} | {mean_std(row.trained_r1)} | {row.gain:+.1f}{flag} "
                f"| {mean_std(row.untrained_nmi)} | {mean_std(row.trained_nmi)} "
                f"| {train_time(row.train_seconds, row.host_loads)} |"
            )
        machines = sorted({machine for row in rows for machine in row.machines})
        lines += ["", MACHINE_NOTE.format(machines="; ".join(machines)), ""]
    if comparison is not None:
        lines += [
            "## Headline comparison at this scale (a small-scale check, not a reproduction)",
            "",
            f"The paper's claim: {comparison.claim.strip()}",
            "",
            f"Why these runs: {comparison.why.strip()}",
            "",
        ]
        found = orderings(rows, comparison)
        if found:
            lines += [
                "| Ordering claimed | R@1 trained (proposed) | R@1 trained (baseline) | Difference | At this scale |"
            ]
            lines += ["|---|---|---|---|---|"]
            for ordering in found:
                verdict = "holds" if ordering.holds else "does not hold"
                if ordering.within_spread:
                    verdict += " (within the seeds' spread)"
                if ordering.runs_that_did_not_learn:
                    names = " and ".join(ordering.runs_that_did_not_learn)
                    verdict += f"; not a fair check: {names} gained under {LEARNING_GAIN:g}"
                lines.append(
                    f"| {ordering.proposed.run_name} > {ordering.baseline.run_name} "
                    f"| {mean_std(ordering.proposed.trained_r1)} | {mean_std(ordering.baseline.trained_r1)} "
                    f"| {ordering.difference:+.1f} | {verdict} |"
                )
            lines.append("")
        else:
            lines += ["No ordering yet: it needs mini results of the proposed run and of a baseline.", ""]
    shows = SHOWS + (" " + FLAGGED_NOTE.format(key=key) if any(row.flagged for row in rows) else "")
    lines += [shows, "", f"Generated from `{source}` by `{DML} reproduce {key} --mini`.", ""]
    return "\n".join(lines)


def build_mini_page(key: str, results_root: Path, tables_root: Path, recipes_dir: Path) -> MiniPage:
    """Write ``<tables_root>/mini/<key>.md`` from ``<results_root>/mini/<key>/`` and the paper's mini.yaml."""
    comparison = load_mini_comparison(recipes_dir, key) if mini_file(recipes_dir, key).is_file() else None
    rows = summarize_runs(mini_results(results_root, key))
    if comparison is not None:  # the comparison's runs first, in its order
        order = {name: number for number, name in enumerate(comparison.run_ids)}
        rows = sorted(rows, key=lambda row: (order.get(row.run_name, len(order)), row.run_name))
    path = tables_markdown(tables_root, key, Tier.MINI)
    source = f"results/mini/{key}/"
    atomic_write_text(path, mini_markdown(key, rows, comparison, source))
    found = orderings(rows, comparison) if comparison is not None else []
    return MiniPage(path, rows, found)
