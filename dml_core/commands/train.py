"""``dml train RUN``: run a recipe (a run id of ``dml recipes list``, or a recipe file), write checkpoints and a
results file."""

from __future__ import annotations

import argparse
from pathlib import Path

from dml_core.command_line import DML
from dml_core.commands.options import DEVICE_HELP, add_max_steps_option, add_reading_option, add_tier_flags, chosen_tier
from dml_core.errors import InputError
from dml_core.output_paths import rehearsal_root, runs_root
from dml_core.tier import Tier


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
    from dml_core.finished_runs import check_finished_run
    from dml_core.recipes import check_reading_choices, parse_reading_choices, resolve_run
    from dml_core.recipes.resolve import resolve
    from dml_core.runner.component_check import check_components
    from dml_core.runner.eta import counted
    from dml_core.training import train
    from dml_core.training.device_choice import check_run_device, describe_device
    from dml_core.training.distributed import Process
    from dml_core.training.trainer import RESULTS_NAME
    from dml_core.writable import require_writable_file, require_writable_folder

    run_definition = resolve_run(args.recipe)
    choices = parse_reading_choices(args.readings)
    check_reading_choices([run_definition], choices, what=f"run {run_definition.id}")
    tier = chosen_tier(args)
    if args.max_steps is not None and tier != Tier.FULL:
        raise InputError(
            f"--max-steps {args.max_steps}: a rehearsal of a full-scale run; a {tier} run is short already"
        )
    recipe = resolve(run_definition, choices, args.overrides, tier)
    check_components(recipe, run_definition.settings.origins, run_definition.file)
    check_run_device(args.device, tier)  # before any work: a full-scale run does not fall back to the CPU
    name = f"{recipe.run_name}-seed{recipe.training.seed}{'' if tier == Tier.FULL else f'-{tier}'}"
    out = args.out or (rehearsal_root(runs_root()) if args.max_steps else runs_root()) / name
    # Before any work: an unwritable place would otherwise be found at the first checkpoint, or after the run.
    require_writable_folder(out, "--out")
    results_path = args.results or out / RESULTS_NAME
    require_writable_file(results_path, "--results")
    rehearsal = args.max_steps is not None  # always trains: a rehearsal's results say nothing worth keeping
    if not (args.rerun or rehearsal) and check_finished_run(results_path, recipe):  # another recipe's: refused
        print(
            f"{results_path}: finished earlier with this recipe (hash {recipe.content_hash()[:12]}), skipped; "
            "--rerun trains it again"
        )
        return 0
    process = Process.from_environment()
    device = process.device(args.device)
    if process.is_main:
        cut = f" (rehearsal: its first {counted(args.max_steps, 'step')})" if rehearsal else ""
        print(f"{name}: training{cut} on {describe_device(device)} in {out}", flush=True)
    path = train(
        recipe,
        out,
        recipe_path=run_definition.file,
        overrides=args.overrides,
        tier=tier,
        resume=args.resume,
        rerun=args.rerun,
        data_root=args.data_root,
        device=args.device,
        progress=not args.no_progress,
        results_path=args.results,
        max_steps=args.max_steps,
    )
    print(path)
    return 0
