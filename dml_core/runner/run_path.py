"""The one path every planned run takes to the trainer, whichever command planned it (``dml train`` its one run:
``one_run.OneRun``; ``dml reproduce`` and ``dml nightly`` a paper's: ``inline.PaperRun``): the rules checked
before anything trains, each in one place and one wording (``--max-steps`` only at full scale, the device, the
recipes' component parameters, the datasets, weight files and caches the runs read, the places they write, the
finished-run rule), the image caches prepared, then the one training entry."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from pathlib import Path

import torch

from dml_core.errors import InputError
from dml_core.pipeline.cache_preparation import caches_to_prepare, prepare_caches
from dml_core.runner import preflight as checks
from dml_core.runner.eta import counted
from dml_core.runner.linear import LinearRun
from dml_core.runner.plan import is_finished
from dml_core.tier import Tier
from dml_core.training import train
from dml_core.training.device_choice import check_run_device, chosen_device
from dml_core.training.distributed import Process
from dml_core.training.run_description import PlannedRun, RunToTrain, trains_again


class RunPath:
    """How planned runs are checked and trained: a mixin of the frozen dataclasses that plan them, which declare
    the options below."""

    tier: Tier
    device: str | None
    data_root: Path | None
    progress: bool
    rerun: bool
    max_steps: int | None
    skip_missing: bool
    resume: bool = True  # continue a run's checkpoint (``dml train``: only with --resume)
    # how the preflight's refusals name the runs' outputs: (their run folders, their results files)
    output_names: tuple[str, str] = ("run folder", "results file")

    def check_rehearsal(self) -> None:
        """``--max-steps``: a rehearsal of the full-scale recipes, which the smoke and mini tiers do not need."""
        if self.max_steps is not None and self.tier != Tier.FULL:
            raise InputError(
                f"--max-steps {self.max_steps}: a rehearsal of the full-scale recipes; the {self.tier} tier's runs "
                "are short already"
            )

    @property
    def trains_again(self) -> bool:
        """Whether finished runs train again (``run_description.trains_again``)."""
        return trains_again(self.rerun, self.max_steps)

    @property
    def refusal_subject(self) -> str | None:
        """What the preflight's refusals are about (a paper: ``paper KEY``); None: one run, whose problems say it."""
        return None

    def training_device(self, deep_runs: bool = True) -> torch.device:
        """The device this process trains on (``Process.device``: ``device``, else the GPU, else the CPU); a
        full-scale run refuses to fall back to the CPU (``device_choice.check_run_device``) where deep runs train
        (linear runs are CPU work)."""
        if deep_runs:
            check_run_device(self.device, self.tier)
        return Process.from_environment().device(self.device)

    def refused(self, what: str, problems: Sequence[str]) -> InputError:
        """The preflight's refusal: each problem on a line under ``<subject>: <what>:``; without a subject (one run,
        whose problems name it), the problems on one line."""
        subject = self.refusal_subject
        if subject is None:
            return InputError("; ".join(problems))
        return InputError(f"{subject}: {what}:\n  " + "\n  ".join(problems))

    def missing_refusal(self, missing: Sequence[checks.MissingInput], runs: Sequence[str]) -> InputError:
        """The refusal of runs whose inputs are missing (``runs``: the names of all planned runs)."""
        return self.refused("missing inputs", [entry.problem for entry in missing])

    def check_recipes(self, plans: Sequence[PlannedRun]) -> None:
        """Refuse every component parameter a planned recipe gets wrong (``preflight.recipe_problems``)."""
        bad = checks.recipe_problems(plans)
        if bad:
            raise self.refused(f"{len(bad)} recipe problem(s)", bad)

    def check_before_training(
        self,
        plans: list[PlannedRun],
        linear_runs: list[LinearRun],
        log: Callable[[str], None],
        tables_root: Path | None = None,
    ) -> tuple[list[PlannedRun], list[LinearRun], dict[str, str]]:
        """The runs that may train, checked before anything trains or is written: every input they read is here
        (else refused, naming each missing one with the runs it blocks; with ``skip_missing`` the runs it blocks
        are left out, said with ``log`` and returned with their missing inputs), every place they (and the
        tables, ``tables_root``) write can be written, and no results file of another recipe is where one would
        go (unless finished runs train again: the finished-run rule, ``finished_runs``)."""
        plans, linear_runs, not_run = self._runnable(plans, linear_runs, log)
        unwritable = checks.unwritable_outputs(plans, linear_runs, tables_root, names=self.output_names)
        if unwritable:
            raise self.refused("outputs that cannot be written", unwritable)
        replaced = [] if self.trains_again else checks.results_of_other_recipes(plans)
        if replaced:
            raise self.refused("finished runs of other recipes", replaced)
        return plans, linear_runs, not_run

    def _runnable(
        self, plans: list[PlannedRun], linear_runs: list[LinearRun], log: Callable[[str], None]
    ) -> tuple[list[PlannedRun], list[LinearRun], dict[str, str]]:
        """The runs whose inputs are all here, and each other run with its missing inputs; refused (every missing
        input with the runs it blocks) unless ``skip_missing``."""
        missing = checks.missing_inputs(plans, self.data_root)
        missing += checks.missing_linear_inputs(linear_runs, self.data_root)
        if not missing:
            return plans, linear_runs, {}
        names = [plan.name for plan in plans] + [run.name for run in linear_runs]
        if not self.skip_missing:
            raise self.missing_refusal(missing, names)
        blocked = [name for name in names if any(name in entry.runs for entry in missing)]
        log(f"--skip-missing: {len(blocked)} of {counted(len(names), 'run')} not run, for want of:")
        for entry in missing:
            log(f"  {entry.line(len(names))}")
        not_run = {name: "; ".join(entry.problem for entry in missing if name in entry.runs) for name in blocked}
        kept = [plan for plan in plans if plan.name not in not_run]
        return kept, [run for run in linear_runs if run.name not in not_run], not_run

    def prepare_caches(self, plans: Sequence[PlannedRun], log: Callable[[str], None]) -> None:
        """Prepare the image caches the runs left to train will train from here (``pipeline.cache_preparation``;
        ``log`` says what it writes). Under torchrun nothing is prepared: several processes do not build one."""
        if Process.from_environment().active:
            return
        to_train = [plan for plan in plans if self.trains_again or not is_finished(plan)]  # no cache: finished
        prepare_caches(caches_to_prepare(to_train, self.data_root, chosen_device(self.device).type), log)

    def training_line(self, plan: PlannedRun, device: str) -> str:
        """What a run's first line says: ``training[ again (--rerun)][ (tier)] on <device> in <run folder>``."""
        again = " again (--rerun)" if self.rerun and plan.results_path.is_file() else ""
        tier = "" if plan.tier == Tier.FULL else f" ({plan.tier})"
        if self.max_steps is not None:
            tier = f" (rehearsal: its first {counted(self.max_steps, 'step')})"
        return f"training{again}{tier} on {device} in {plan.run_dir}"

    def train(self, plan: PlannedRun) -> Path:
        """The one training entry: train one planned run where and how these options say (continuing its
        checkpoint if ``resume``) and return its results file. A full-scale run does not fall back to the CPU
        (``training_device``; a job checks it where it runs)."""
        check_run_device(self.device, self.tier)
        return train(
            RunToTrain(
                plan,
                device=self.device,
                data_root=self.data_root,
                resume=self.resume,
                rerun=self.rerun,
                max_steps=self.max_steps,
                progress=self.progress,
            )
        )
