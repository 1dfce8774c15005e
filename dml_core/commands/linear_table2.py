"""``dml linear-table2``: anml's Table 2 protocol (linear metric learning, kNN accuracy) on one data set."""

from __future__ import annotations

import argparse
from pathlib import Path

from dml_core.command_line import DML
from dml_core.commands.options import non_negative_int, positive_int
from dml_core.linear.grids import PAPER_GRIDS, thin_grid
from dml_core.linear.methods import DISPLAY_NAMES, METHODS
from dml_core.linear.plan import TABLE2_ROW_SLUGS, LinearPlan
from dml_core.linear.protocol import K_RULES, run_table2_protocol
from dml_core.linear.solver_config import SolverConfig
from dml_core.linear.uci import UCI_DATASETS
from dml_core.output_paths import data_root
from dml_core.provenance import git_state
from dml_core.runner.linear import linear_runs, write_run_results
from dml_core.tier import Tier
from dml_core.writable import require_writable_folder

# The plan id recorded in results files this command writes (they come from no pinned plan file).
AD_HOC_PLAN_ID = "dml-linear-table2"


def add_parser(subparsers) -> None:
    parser = subparsers.add_parser(
        "linear-table2",
        description="Random stratified 70/30 splits, z-score (+ PCA to 150), 5-fold CV over the paper's "
        "grids, kNN accuracy with K in 1..40; mean and std over the splits, in percent. Iris and Wine need "
        f"no data root; the other sets must first be prepared with `{DML} prepare uci:<name> --root DIR`.",
    )
    parser.add_argument("dataset", choices=list(UCI_DATASETS), help="a data set of Table 1")
    parser.add_argument("--methods", nargs="+", choices=list(METHODS), default=list(METHODS))
    parser.add_argument("--splits", type=positive_int, default=30, help="random 70/30 splits (paper: 30)")
    parser.add_argument("--seed", type=non_negative_int, default=0, help="split s uses seed + s")
    parser.add_argument(
        "--k-rule",
        choices=K_RULES,
        default="test",
        help="test: best K on the test part, as the paper reports; cv: K chosen by CV",
    )
    parser.add_argument(
        "--grid-every",
        type=positive_int,
        default=1,
        help="keep every N-th value of each paper grid (1: the paper's grid)",
    )
    parser.add_argument(
        "--max-iterations",
        type=positive_int,
        default=SolverConfig.max_iterations,
        help="solver objective evaluations per fit",
    )
    parser.add_argument(
        "--root",
        type=Path,
        help=f"the --root of `{DML} prepare uci:<name>` (default: $DML_DATA_ROOT, else ./data; not needed for "
        "Iris, Wine)",
    )
    parser.add_argument(
        "--jobs", type=positive_int, default=1, help="parallel processes for the grid search (same result)"
    )
    parser.add_argument("--out", type=Path, help="folder for one JSON result per method")
    parser.add_argument(
        "--results",
        type=Path,
        metavar="ROOT",
        help="also write a results file per Table 2 method into ROOT/anml/<row>-seed<seed>.json (the layout "
        f"`{DML} tables --paper anml` reads; e.g. ./results or $DML_RESULTS_DIR); Euclidean has no Table 2 row",
    )
    parser.set_defaults(run=run)


def _results_run(args: argparse.Namespace, method: str):
    """The run record under which ``method``'s result is written to ``--results`` (its settings and path)."""
    plan = LinearPlan(
        id=AD_HOC_PLAN_ID,
        paper="anml",
        dataset=args.dataset,
        methods=[method],
        splits=args.splits,
        seed=args.seed,
        k_rule=args.k_rule,
        grid_every=args.grid_every,
        max_iterations=args.max_iterations,
    )
    overrides = [
        f"splits={args.splits}", f"seed={args.seed}", f"k_rule={args.k_rule}",
        f"grid_every={args.grid_every}", f"max_iterations={args.max_iterations}",
    ]  # fmt: skip
    return linear_runs("anml", plan, tier=Tier.FULL, results_root=args.results, overrides=overrides)[0]


def run(args: argparse.Namespace) -> int:
    for folder, option in ((args.out, "--out"), (args.results, "--results")):
        if folder:
            require_writable_folder(folder, option)  # before hours of grid search
    solver = SolverConfig(max_iterations=args.max_iterations)
    for method in args.methods:
        git_at_start = {"from": 0, **git_state()}
        result = run_table2_protocol(
            args.dataset,
            method,
            root=data_root(args.root),  # --root, else $DML_DATA_ROOT, else ./data: as prepare's
            n_splits=args.splits,
            seed=args.seed,
            grid=thin_grid(PAPER_GRIDS[method], args.grid_every),
            k_rule=args.k_rule,
            solver=solver,
            n_jobs=args.jobs,
        )
        if args.out:
            result.save_json(args.out / f"anml_table2_{args.dataset}_{method}_k-{args.k_rule}.json")
        print(
            f"{result.dataset}\t{result.method}\t{result.mean_accuracy:.2f} ± {result.std_accuracy:.2f}\t"
            f"k_rule={result.k_rule}\tsplits={len(result.splits)}\t{result.seconds:.1f} s",
            flush=True,
        )
        if args.results and method in TABLE2_ROW_SLUGS:
            print(f"results file: {write_run_results(_results_run(args, method), result, [git_at_start])}", flush=True)
        elif args.results:
            print(f"{DISPLAY_NAMES[method]}: no Table 2 row, so no results file", flush=True)
    return 0
