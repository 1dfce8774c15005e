"""``dml train RECIPE``: run a recipe, write checkpoints and a results file."""

from __future__ import annotations

import argparse
from pathlib import Path

from dml_core.output_paths import runs_root

SUMMARY = "train and evaluate one recipe; writes checkpoint.pt and results.json"


def add_parser(subparsers) -> None:
    parser = subparsers.add_parser(
        "train",
        help=SUMMARY,
        description="Train RECIPE (a YAML file, see reproduce/<paper>/), evaluating on the test split every "
        "training.eval_every, and write an atomic checkpoint and a results file.",
    )
    parser.add_argument("recipe", type=Path, help="recipe YAML")
    parser.add_argument(
        "--set",
        dest="overrides",
        action="append",
        default=[],
        metavar="KEY=VALUE",
        help="override a recipe field, e.g. --set training.seed=1 (repeatable)",
    )
    parser.add_argument(
        "--out", type=Path, help="run folder (default: $DML_RUNS_DIR or runs/, then <recipe id>-seed<seed>[-smoke])"
    )
    parser.add_argument("--results", type=Path, help="results file (default: <out>/results.json)")
    parser.add_argument("--resume", action="store_true", help="continue the checkpoint in --out; skip if finished")
    parser.add_argument(
        "--smoke",
        action="store_true",
        help="CPU smoke run: embedded dataset, random init, small images, few iterations",
    )
    parser.add_argument("--data-root", type=Path, help="prepared datasets (default: recipe, $DML_DATA_ROOT, ./data)")
    parser.add_argument("--device", help="torch device (default: cuda if present, else cpu)")
    parser.add_argument("--no-progress", action="store_true", help="no progress bar")
    parser.set_defaults(run=run)


def run(args: argparse.Namespace) -> int:
    from dml_core.recipe import load_recipe, smoke_version
    from dml_core.training import train

    recipe = load_recipe(args.recipe, args.overrides)
    if args.smoke:
        recipe = smoke_version(recipe)
    out = args.out or runs_root() / f"{recipe.id}-seed{recipe.training.seed}{'-smoke' if args.smoke else ''}"
    path = train(
        recipe,
        out,
        recipe_path=args.recipe,
        overrides=args.overrides,
        smoke=args.smoke,
        resume=args.resume,
        data_root=args.data_root,
        device=args.device,
        progress=not args.no_progress,
        results_path=args.results,
    )
    print(path)
    return 0
