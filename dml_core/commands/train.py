"""``dml train RUN``: run a recipe (a run id of ``dml recipes list``, or a recipe file), write checkpoints and a
results file: planned, checked and trained as ``dml reproduce``'s runs are (``dml_core.runner.one_run``)."""

from __future__ import annotations

import argparse
from pathlib import Path

from dml_core.command_line import DML
from dml_core.commands.options import DEVICE_HELP, add_max_steps_option, add_reading_option, add_tier_flags, chosen_tier


def add_parser(subparsers) -> None:
    parser = subparsers.add_parser(
        "train",
        description=f"Train RUN (a run id such as ours-cub200 or damlrrm/npair-cub200, see `{DML} recipes "
        "list`; or a recipe file of one run), evaluating on the test split every training.eval_every, and write an "
        "atomic checkpoint and a results file.",
    )
    parser.add_argument("recipe", metavar="RUN", help="run id (PAPER/ID where two papers share it) or recipe YAML")
    add_reading_option(
        parser, f"train under another value of a reading the run rests on (repeatable; `{DML} recipes show RUN`)"
    )
    parser.add_argument(
        "--set",
        dest="overrides",
        action="append",
        default=[],
        metavar="KEY=VALUE",
        help="override a recipe field, e.g. --set training.seed=1 (repeatable; applied after --smoke or --mini "
        "shrinks the recipe, so it is kept; a smoke.* or mini.* field before, so the shrink follows it: "
        "--mini --set mini.start=glyph-pretrained --set mini.trunk_lr_scale=1)",
    )
    parser.add_argument(
        "--out",
        type=Path,
        help="run folder (default: $DML_RUNS_DIR or runs/, then [rehearsal/]<recipe id>-seed<seed>[-smoke|-mini])",
    )
    parser.add_argument("--results", type=Path, help="results file (default: <out>/results.json)")
    parser.add_argument("--resume", action="store_true", help="continue the checkpoint in --out")
    parser.add_argument(
        "--rerun",
        action="store_true",
        help="train a finished run again (its results file exists) and replace its results once the new ones are "
        "complete; without it a finished run is skipped when its recipe is the same and refused when it differs",
    )
    add_tier_flags(
        parser,
        smoke_help="CPU smoke run: embedded dataset, random init, small images, few iterations",
        mini_help="CPU mini run (the recipe's mini: settings): embedded_mini glyphs, random init, narrowed backbone, "
        "evaluated before and after training",
    )
    parser.add_argument("--data-root", type=Path, help="prepared datasets (default: recipe, $DML_DATA_ROOT, ./data)")
    parser.add_argument("--device", help=DEVICE_HELP)
    add_max_steps_option(parser)
    parser.add_argument("--no-progress", action="store_true", help="no progress bar")
    parser.set_defaults(run=run)


def run(args: argparse.Namespace) -> int:
    # Here, not at the top: training loads torch; `dml train --help` stays light.
    from dml_core.runner.one_run import OneRun, train_one

    one = OneRun(
        args.recipe,
        readings=args.readings,
        overrides=args.overrides,
        tier=chosen_tier(args),
        out=args.out,
        results=args.results,
        resume=args.resume,
        rerun=args.rerun,
        data_root=args.data_root,
        device=args.device,
        max_steps=args.max_steps,
        progress=not args.no_progress,
    )
    print(train_one(one))
    return 0
