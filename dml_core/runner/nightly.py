"""``dml nightly``: every run of every paper trained again at the current code, in folders of the nightly's own,
their pages built once all have trained (as ``dml tables`` builds them: ``dml_core.tables.builder``), then checked
against the published numbers and against the previous passing nightly, and kept in the history.

A nightly is named ``<UTC date>-<commit>`` (``-dirty-<digest of the uncommitted diff>`` when the checkout has
changes). Its results, run folders and tables go to ``<results>/nightly/<name>/``, ``<runs>/nightly/<name>/`` and
``<tables>/nightly/<name>/`` (the usual ``[smoke/]<key>`` layout inside), so nothing a user or an earlier nightly
finished is skipped: the key of a finished run is its recipe *and* the code. Started again under the same name (an
interrupted nightly), it resumes: finished runs are skipped, interrupted ones continue. ``nightly.json`` in its
results folder records the code and environment it started under; another start under that name with other code
is refused. The gate is ``dml_core.tables.gate.check``'s (waived cells listed apart), the baseline the latest passing
nightly of the same tier in ``dml_core.tables.nightly.history``, whose trend figures are redrawn at the end.
"""

from __future__ import annotations

import datetime as dt
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path

from dml_core import provenance
from dml_core.atomic_io import atomic_write_json, read_json_object
from dml_core.errors import InputError
from dml_core.output_paths import data_root as resolve_data_root
from dml_core.runner.inline import PaperRun, reproduce
from dml_core.runner.run_options import RunOptions
from dml_core.tables.builder.pages import BuiltPages, build_pages
from dml_core.tables.gate.check import Failure, Waived, check_long_forms, gate_lines
from dml_core.tables.gate.tolerances import load_tolerances
from dml_core.tables.nightly.history import (
    Baseline,
    NightlyRecord,
    history_path,
    nightly_folder,
    previous_passing,
    read_history,
    record_nightly,
)
from dml_core.tables.nightly.trends import draw_trends
from dml_core.tier import Tier
from dml_core.vocabulary import PAPER_KEYS

TIERS = (Tier.FULL, Tier.SMOKE)
MANIFEST_NAME = "nightly.json"
SHOWN_CHANGES = 12  # changed lines listed one by one; the rest are counted


def nightly_name(code: dict, now: dt.datetime) -> str:
    """``<date>-<commit>``, with the digest of the uncommitted changes when there are some.

    >>> when = dt.datetime(2026, 1, 31, 23, 0, tzinfo=dt.UTC)
    >>> nightly_name({"commit": "0123456789ab", "dirty": False, "diff": None}, when)
    '2026-01-31-0123456'
    >>> nightly_name({"commit": "0123456789ab", "dirty": True, "diff": "fedcba9876"}, when)
    '2026-01-31-0123456-dirty-fedcba98'
    """
    name = f"{now.astimezone(dt.UTC):%Y-%m-%d}-{str(code['commit'])[:7]}"
    return name + (f"-dirty-{str(code.get('diff') or 'unknown')[:8]}" if code.get("dirty") else "")


def changed_lines(values: Mapping[str, Mapping[str, float]], before: Mapping[str, Mapping[str, float]]) -> list[str]:
    """Every line both nightlies measured whose value moved at all, ``paper line: before -> now``. On the CPU the
    smoke tier is bit-reproducible, so a change there is the code's doing even when no line fails.

    >>> changed_lines({"anml": {"a": 1.0, "b": 2.5, "c": 3.0}}, {"anml": {"a": 1.0, "b": 2.0}})
    ['anml b: 2.0000 -> 2.5000 (+0.5000)']
    """
    return [
        f"{paper} {line}: {before[paper][line]:.4f} -> {value:.4f} ({value - before[paper][line]:+.4f})"
        for paper, lines in values.items()
        for line, value in lines.items()
        if line in before.get(paper, {}) and abs(value - before[paper][line]) > 1e-9
    ]


def _code_text(code: dict) -> str:
    dirty = f" with uncommitted changes {str(code.get('diff') or 'unknown')[:8]}" if code.get("dirty") else ""
    return f"commit {str(code['commit'])[:7]}{dirty}"


def start_manifest(folder: Path, name: str, tier: str, code: dict, now: dt.datetime) -> dict:
    """Write ``<folder>/nightly.json`` for a new nightly, or read it back for a resumed one (same code only)."""
    path = folder / MANIFEST_NAME
    if path.is_file():
        manifest = read_json_object(path, "nightly record")
        started = manifest.get("code", {})
        if (
            any(started.get(key) != code.get(key) for key in ("commit", "dirty", "diff"))
            or manifest.get("tier") != tier
        ):
            raise InputError(
                f"{path}: field code: nightly {name} ({manifest.get('tier')}) started at {_code_text(started)}; this "
                f"one is {tier} at {_code_text(code)}: give it another --name (or none: the date and code name it)"
            )
        return manifest
    manifest = {
        "name": name,
        "tier": tier,
        "started": now.astimezone(dt.UTC).isoformat(timespec="seconds"),
        "code": code,
        "environment": provenance.environment(),
    }
    atomic_write_json(path, manifest)
    return manifest


@dataclass(frozen=True)
class Nightly(RunOptions):
    """What ``dml nightly`` runs (``papers`` at ``tier``) and the roots its folders go under; the other fields are
    the ``RunOptions`` it shares with ``dml reproduce``, passed to every paper."""

    papers: Sequence[str]
    tier: Tier
    name: str | None = None  # default: nightly_name of the code and the date

    def own_folders(self, name: str) -> dict[str, Path]:
        """Nightly ``name``'s runs, results and tables roots."""
        return {
            "runs_root": nightly_folder(self.runs_root) / name,
            "results_root": nightly_folder(self.results_root) / name,
            "tables_root": nightly_folder(self.tables_root) / name,
        }

    def paper_run(self, key: str, name: str) -> PaperRun:
        return PaperRun(key, tier=Tier(self.tier), **{**self.run_options(), **self.own_folders(name)})

    def build_pages(self, name: str, log: Callable[[str], None]) -> BuiltPages:
        """Every paper's page of nightly ``name`` and their index, in its own tables root, as ``dml tables``
        builds them (``tables.builder``)."""
        folders = self.own_folders(name)
        return build_pages(
            self.papers,
            Tier(self.tier),
            results_root=folders["results_root"],
            tables_root=folders["tables_root"],
            tolerances=load_tolerances(self.tolerances_path),
            recipes_dir=Path(self.recipes_dir),
            papers_dir=self.papers_dir,
            data_root=resolve_data_root(self.data_root),
            log=log,
        )


@dataclass
class NightlyReport:
    """What a nightly found: its verdict, the failing and waived lines, the runs that failed, what it was
    compared with, and the files it wrote."""

    name: str
    tier: str
    passed: bool
    failures: list[Failure] = field(default_factory=list)
    waived: list[Waived] = field(default_factory=list)
    failed_runs: dict[str, str] = field(default_factory=dict)
    refused: list[str] = field(default_factory=list)  # results files the tables' gate refused (one line each)
    baseline: Baseline | None = None
    changed: list[str] = field(default_factory=list)  # lines whose value moved since the baseline
    history: Path | None = None
    trends: list[Path] = field(default_factory=list)


def run_nightly(
    nightly: Nightly, *, code: dict | None = None, now: dt.datetime | None = None, log: Callable[[str], None] = print
) -> NightlyReport:
    """Train every paper's runs into the nightly's folders, build their pages, check, record the history and
    redraw the trends.

    A missing dataset or weight file of any paper stops everything before any training (``InputError``); a run
    that fails (non-finite loss) fails the nightly but the other runs and papers still run.
    """
    if nightly.tier not in TIERS:
        raise InputError(f"nightly: tier: expected one of {', '.join(TIERS)}, found {nightly.tier!r}")
    unknown = sorted(set(nightly.papers) - set(PAPER_KEYS))
    if unknown:
        raise InputError(f"nightly: papers: expected some of {', '.join(PAPER_KEYS)}, found {', '.join(unknown)}")
    code = code or provenance.code_state()
    now = now or dt.datetime.now(dt.UTC)
    name = nightly.name or nightly_name(code, now)
    results_folder = nightly_folder(nightly.results_root) / name
    history_file = history_path(nightly.tables_root)
    history = read_history(history_file)  # read first: a damaged history should not cost a night of training
    for key in nightly.papers:  # and every paper's inputs before the first trains (each says all it misses)
        nightly.paper_run(key, name).preflight()
    manifest = start_manifest(results_folder, name, nightly.tier, code, now)
    log(f"nightly {name} ({nightly.tier}, {_code_text(code)}): results in {results_folder}")

    report = NightlyReport(name, nightly.tier, passed=False)
    for key in nightly.papers:
        log(f"nightly {name}: {key}")
        paper = reproduce(nightly.paper_run(key, name), log, build_tables=False)
        report.failed_runs.update({f"{key} {run}": reason for run, reason in paper.failed.items()})
    built = nightly.build_pages(name, log)
    report.refused = [str(refusal) for refusal in built.refused]

    report.baseline = previous_passing(history, nightly.tier, name)
    previous = report.baseline.values if report.baseline else {}
    gate = check_long_forms(built.long_forms, previous, Tier(nightly.tier))
    report.failures, report.waived = gate.failures, gate.waived
    report.changed = changed_lines(gate.values, previous)
    report.passed = not gate.failures and not report.failed_runs and not report.refused

    record = NightlyRecord(
        name=name,
        tier=nightly.tier,
        started=manifest["started"],
        commit=str(code["commit"]),
        dirty=bool(code.get("dirty")),
        passed=report.passed,
        frames={key: tables.frame for key, tables in built.papers.items()},
    )
    report.history = record_nightly(history_file, record)
    report.trends = draw_trends(read_history(history_file), nightly.tier, nightly.tables_root)

    published = "" if nightly.tier == "smoke" else "the published numbers"
    if report.baseline:
        base = report.baseline
        also = f" and {published}" if published else ""
        log(f"compared with the previous passing {nightly.tier} nightly {base.name} (commit {base.commit[:7]}){also}")
        measured = sum(len(lines) for lines in gate.values.values())
        log(
            f"changed since {base.name}: {len(report.changed)} of {measured} measured line(s)"
            + (":" if report.changed else "")
        )
        for line in report.changed[:SHOWN_CHANGES]:
            log(f"  CHANGED {line}")
        if len(report.changed) > SHOWN_CHANGES:
            log(f"  ... and {len(report.changed) - SHOWN_CHANGES} more (tables/nightly/history.csv has every value)")
    else:
        log(f"no earlier passing {nightly.tier} nightly in {history_file}: compared with {published or 'nothing'}")
    for line in gate_lines(gate, Tier(nightly.tier)):
        log(line)
    for run, reason in report.failed_runs.items():
        log(f"  RUN FAILED {run}: {reason}")
    for refusal in report.refused:
        log(f"  REFUSED {refusal}")
    log(f"history: {report.history}" + "".join(f"\ntrend: {path}" for path in report.trends))
    log(f"nightly {name}: {'passed' if report.passed else 'FAILED'}")
    return report
