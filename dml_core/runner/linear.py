"""Run a paper's pinned linear plans (``reproduce/<key>/linear/*.yaml``) into its results folder.

Each (plan, method) is one run writing ``<results>/[smoke/]<key>/<row id>-seed<seed>.json``, the same layout
as deep runs, so ``dml tables`` reads both. A run whose results file holds the same settings hash is skipped
(unless ``rerun``: then it runs again and its results file is replaced once the new one is complete); an
interrupted one resumes after its last finished split (kept in its run folder under ``runs/``).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

from dml_core.command_line import DML
from dml_core.errors import InputError
from dml_core.linear.grids import PAPER_GRIDS, thin_grid
from dml_core.linear.plan import LinearPlan, load_linear_plan, run_settings, settings_hash, smoke_plan, table2_row_id
from dml_core.linear.solver_config import SolverConfig
from dml_core.linear.uci import cache_path, get_uci_dataset
from dml_core.output_paths import data_root as resolve_data_root
from dml_core.output_paths import recorded_path, results_file, run_folder
from dml_core.provenance import git_record, git_state
from dml_core.results import LinearResultsFile, load_results
from dml_core.runner.eta import RunClock
from dml_core.tier import Tier

if TYPE_CHECKING:
    from dml_core.linear.protocol import Table2Result

# The protocol's modules (scikit-learn, numba, joblib) are imported where a run computes: every process that plans
# runs imports this module (each training process among them), and most never run a linear one.


@dataclass(frozen=True)
class LinearRun:
    """One method of one plan (smoke settings applied when asked) and where its results file goes."""

    key: str
    plan_path: Path | None
    plan: LinearPlan
    method: str
    tier: Tier
    overrides: tuple[str, ...]
    results_path: Path
    splits_path: Path | None = None  # finished splits of an interrupted run; None: no resuming

    @property
    def name(self) -> str:
        return f"{table2_row_id(self.method, self.plan.dataset)} seed {self.plan.seed}"

    @property
    def sha256(self) -> str:
        return settings_hash(run_settings(self.plan, self.method, self.tier))


def linear_runs(
    key: str,
    plan: LinearPlan,
    *,
    tier: Tier,
    results_root: Path,
    plan_path: Path | None = None,
    overrides: Sequence[str] = (),
    runs_root: Path | None = None,
) -> list[LinearRun]:
    """One run per method of ``plan`` (shrunk by its ``smoke:`` block when ``smoke``); with ``runs_root``,
    each keeps its finished splits in its run folder there and resumes from them."""
    resolved = smoke_plan(plan) if tier == Tier.SMOKE else plan

    def splits_path(method: str) -> Path | None:
        if runs_root is None:
            return None
        return run_folder(runs_root, key, table2_row_id(method, resolved.dataset), resolved.seed, tier) / "splits.json"

    return [
        LinearRun(
            key=key,
            plan_path=plan_path,
            plan=resolved,
            method=method,
            tier=tier,
            overrides=tuple(overrides),
            results_path=results_file(results_root, key, table2_row_id(method, resolved.dataset), resolved.seed, tier),
            splits_path=splits_path(method),
        )
        for method in resolved.methods
    ]


def plan_linear_runs(
    key: str, plan_paths: Sequence[Path], tier: Tier, results_root: Path, runs_root: Path | None = None
) -> list[LinearRun]:
    """Every method of every plan file (resumable when ``runs_root`` is given)."""
    runs: list[LinearRun] = []
    for path in plan_paths:
        plan = load_linear_plan(path)
        if plan.paper != key:
            raise InputError(f"{path}: field paper: expected {key!r}, found {plan.paper!r}")
        runs += linear_runs(key, plan, tier=tier, results_root=results_root, plan_path=path, runs_root=runs_root)
    return runs


def missing_uci_data(run: LinearRun, data_root: Path | None) -> str | None:
    """The data set ``run`` needs when it is not prepared here, with how to prepare it (Iris and Wine ship with
    scikit-learn)."""
    root = resolve_data_root(data_root)
    dataset = get_uci_dataset(run.plan.dataset)
    if dataset.bundled or cache_path(dataset.name, root).is_file():
        return None
    prepare = f"`{DML} prepare uci:{dataset.name} --root {root}`"
    return f"UCI data set {dataset.name} is not prepared under {root}: run {prepare}"


def is_linear_finished(run: LinearRun) -> bool:
    """A linear results file with exactly this run's settings hash exists."""
    if not run.results_path.is_file():
        return False
    results = load_results(run.results_path)
    return isinstance(results, LinearResultsFile) and results.plan.sha256 == run.sha256


def done_splits(run: LinearRun) -> tuple[list, list[dict]]:
    """The splits an interrupted earlier attempt of ``run`` finished and the git segments that computed them
    (none if not resumable)."""
    from dml_core.linear.split_checkpoint import load_done_splits  # the protocol's modules: see the top

    return load_done_splits(run.splits_path, run.sha256) if run.splits_path else ([], [])


def run_protocol(
    run: LinearRun, *, data_root: Path | None = None, jobs: int = 1, announce: Callable[[str], None] | None = None
) -> tuple[Table2Result, list[dict]]:
    """The Table 2 protocol for one method under the run's (resolved) plan, after its finished splits; also
    the git segments of the splits (the earlier starts' and this one's, read now). ``announce`` is told how
    many splits an earlier attempt finished (", resuming after N finished (kept in PATH)", or "")."""
    # The protocol's modules load where a linear run computes (see the top of this module).
    from dml_core.linear.protocol import run_table2_protocol
    from dml_core.linear.split_checkpoint import save_done_splits

    plan = run.plan
    done, segments = done_splits(run)
    if announce is not None:
        announce(f", resuming after {len(done)} finished (kept in {run.splits_path})" if done else "")
    segments = [*segments, {"from": len(done), **git_state()}]
    keep = None
    if run.splits_path is not None:

        def keep(splits):
            save_done_splits(run.splits_path, run.sha256, splits, segments)

    result = run_table2_protocol(
        plan.dataset,
        run.method,
        root=resolve_data_root(data_root),
        n_splits=plan.splits,
        seed=plan.seed,
        grid=thin_grid(PAPER_GRIDS[run.method], plan.grid_every),
        k_rule=plan.k_rule,
        n_folds=plan.cv_folds,
        solver=SolverConfig(max_iterations=plan.max_iterations),
        n_jobs=jobs,
        done=done,
        on_split=keep,
    )
    return result, segments


def write_run_results(run: LinearRun, result: Table2Result, git_segments: list[dict]) -> Path:
    """Write ``result`` (obtained under ``run``'s settings, by the starts ``git_segments`` records) as the run's
    results file, validated, atomically."""
    from dml_core.linear.results_file import write_linear_results  # the protocol's modules: see the top

    record = {
        "id": run.plan.id,
        "path": recorded_path(run.plan_path) if run.plan_path else None,
        "sha256": run.sha256,
        "overrides": list(run.overrides),
    }
    return write_linear_results(
        run.results_path,
        result,
        paper=run.key,
        plan=record,
        grid_every=run.plan.grid_every,
        tier=run.tier,
        git=git_record(git_segments),
    )


def execute_linear_run(
    run: LinearRun, *, data_root: Path | None = None, jobs: int = 1, announce: Callable[[str], None] | None = None
) -> Path:
    """Run the Table 2 protocol for one method (resuming its finished splits) and write its results file."""
    result, segments = run_protocol(run, data_root=data_root, jobs=jobs, announce=announce)
    path = write_run_results(run, result, segments)
    if run.splits_path is not None:
        run.splits_path.unlink(missing_ok=True)
    return path


def reproduce_linear(
    runs: Sequence[LinearRun],
    *,
    data_root: Path | None = None,
    jobs: int = 1,
    log: Callable[[str], None] = print,
    rerun: bool = False,
) -> tuple[list[str], list[str]]:
    """Run every unfinished run (every run with ``rerun``); returns the names run and the names skipped (finished
    earlier). Each start says the ETA of the runs left, from the pace of those run so far."""
    trained, skipped = [], []
    to_run = [rerun or not is_linear_finished(run) for run in runs]
    clock = RunClock()
    for number, (run, run_it) in enumerate(zip(runs, to_run, strict=True), start=1):
        prefix = f"[linear {number}/{len(runs)}] {run.name}"
        if not run_it:
            log(f"{prefix}: finished earlier ({run.results_path}), skipped")
            skipped.append(run.name)
            continue
        eta = clock.eta(sum(to_run[number - 1 :]))
        start = (
            f"{prefix}: Table 2 protocol{' (smoke)' if run.tier == Tier.SMOKE else ''}, {run.plan.splits} splits{eta}"
        )
        clock.start()
        execute_linear_run(
            run, data_root=data_root, jobs=jobs, announce=lambda resuming, start=start: log(start + resuming)
        )
        clock.stop()
        trained.append(run.name)
    return trained, skipped
