"""The ``precision`` part: what the ``precision`` reading's other value (bf16 autocast of the model on CUDA; the
default is fp32) does to a training step, beside what the step's own noise does.

For every registered loss (on the parity part's MLP) and each paper's main recipe, bf16's change of the fp32 step's
update is read against the change that another batch, or a nudge of the batch, makes anyway. Reported, never a
failure: it is evidence for the reading's default (``reproduce/readings.yaml``: fp32 until bf16 is shown harmless).
"""

from __future__ import annotations

from math import inf

import torch

from dml_core.gpu_check.experiments.overhead import OneBatchRun, bound_recipe
from dml_core.gpu_check.parity import one_step, relative_difference
from dml_core.gpu_check.part import CheckContext, Outcome
from dml_core.losses import LOSSES
from dml_core.recipes.mini import main_run_references
from dml_core.training.determinism import run_determinism

OTHER_BATCH = 2  # parity_batch's noise seed of the second batch
RECIPE_STEPS = 3
NUDGE = 1e-6  # the recipes' nudge of the images, relative: about 8 fp32 roundings


def whole_update_difference(reference: dict[str, torch.Tensor], other: dict[str, torch.Tensor]) -> float:
    """``||other - reference|| / ||reference||`` over every tensor together (parity's ``relative_difference`` of the
    whole step's updates).

    >>> whole_update_difference({"a": torch.tensor([3.0]), "b": torch.tensor([4.0])},
    ...                         {"a": torch.tensor([3.0]), "b": torch.tensor([4.5])})
    0.1
    """
    names = sorted(reference)
    return relative_difference(
        torch.cat([other[name].flatten() for name in names]), torch.cat([reference[name].flatten() for name in names])
    )


def perturbations(fp32: dict, bf16: dict, other_batch: dict) -> dict:
    """bf16's and another batch's perturbation of the fp32 update, and their ratio.

    >>> perturbations({"w": torch.tensor([1.0])}, {"w": torch.tensor([1.25])}, {"w": torch.tensor([0.5])})
    {'bf16_rel': 0.25, 'other_batch_rel': 0.5, 'ratio': 0.5}
    """
    bf16_rel, batch_rel = whole_update_difference(fp32, bf16), whole_update_difference(fp32, other_batch)
    return {"bf16_rel": bf16_rel, "other_batch_rel": batch_rel, "ratio": bf16_rel / batch_rel if batch_rel else inf}


def precision_figures(loss_name: str, device: torch.device) -> dict:
    """One loss's bf16 and other-batch perturbations of the fp32 step (``parity.one_step``: the parity part's MLP,
    weights and batch; the other batch has the same class means), and their ratio: near 1 or above, bf16 would be a
    visible change of the method's steps."""
    fp32 = one_step(loss_name, device).updates()
    return perturbations(
        fp32,
        one_step(loss_name, device, precision="bf16").updates(),
        one_step(loss_name, device, noise_seed=OTHER_BATCH).updates(),
    )


def _trainable(run: OneBatchRun) -> dict[str, torch.Tensor]:
    """The model's and the loss's trainable parameters, copied in float64 on the host."""
    named = [("model", run.parts.model), ("loss", run.parts.loss)]
    return {
        f"{owner}.{name}": value.detach().double().cpu()
        for owner, module in named
        for name, value in module.named_parameters()
        if value.requires_grad
    }


def _update_over_steps(run: OneBatchRun, settings, batch: tuple | None = None) -> dict[str, torch.Tensor]:
    """The trainable parameters' change over ``RECIPE_STEPS`` steps from the run's start (on ``batch``, images and
    labels, or the run's first batch)."""
    run.restart()
    before = _trainable(run)
    for _ in range(RECIPE_STEPS):
        run.step(run.parts.model, run.parts.loss, settings, *(batch or ()))
    after = _trainable(run)
    return {name: after[name] - before[name] for name in before}


def recipe_precision_figures(recipe, context: CheckContext) -> dict:
    """A main recipe's bf16, nudge and other-batch perturbations of its fp32 update over ``RECIPE_STEPS`` steps (the
    trainable parameters' change), where the backbone's convolutions run in bf16 too. The nudge is a second scale: a
    step that makes discrete choices (a tree, mined pairs) or normalises tiny gradients (Adam's first steps) can
    move far under any rounding."""
    fp32_settings = recipe.training.model_copy(update={"precision": "fp32"})
    bf16_settings = recipe.training.model_copy(update={"precision": "bf16"})
    with run_determinism(context.device, recipe.training.deterministic):
        run = OneBatchRun.build(recipe, context, spare_batch=True)
        fp32 = _update_over_steps(run, fp32_settings)
        bf16 = _update_over_steps(run, bf16_settings)
        nudged = _update_over_steps(run, fp32_settings, (run.images * (1 + NUDGE), run.labels))
        other_batch = _update_over_steps(run, fp32_settings, run.spare)
    figures = perturbations(fp32, bf16, other_batch)
    nudge_rel = whole_update_difference(fp32, nudged)
    return {
        "batch": len(run.images),
        "steps": RECIPE_STEPS,
        **figures,
        "nudge_rel": nudge_rel,
        "ratio_to_nudge": figures["bf16_rel"] / nudge_rel if nudge_rel else inf,
    }


def run_precision(context: CheckContext, runs=None, recipe_of=bound_recipe) -> Outcome:
    """Every registered loss on the MLP, then every recipe of ``runs`` (default: each paper's main run;
    ``recipe_of`` makes each run's recipe)."""
    runs = main_run_references() if runs is None else runs
    losses = {name: precision_figures(name, context.device) for name in sorted(LOSSES)}
    recipes: dict[str, dict] = {}
    figures = {"losses": losses, "recipes": recipes}
    for run in runs:
        context.stop_if_out_of_time(f"{len(losses)} losses and {len(recipes)} of {len(runs)} recipes", figures)
        try:
            recipes[run] = recipe_precision_figures(recipe_of(run), context)
        except Exception as error:  # reported, never a failure: the other recipes and the losses' figures stand
            recipes[run] = {"error": f"{type(error).__name__}: {error}"}
        context.log(f"precision {run}: {recipes[run]}")
    measured = {run: figure for run, figure in recipes.items() if "error" not in figure}
    nudges = [figure["ratio_to_nudge"] for figure in measured.values()]
    beyond_nudge = f" and {min(nudges):.0f}-{max(nudges):.0f}x a nudge's" if nudges else ""
    failed = f"; {len(recipes) - len(measured)} could not run" if len(measured) < len(recipes) else ""
    return Outcome(f"{_summary(losses, 'losses')}; {_summary(measured, 'recipes')}{beyond_nudge}{failed}", figures)


def _summary(figures: dict[str, dict], what: str) -> str:
    """The median and largest ratio of ``figures``.

    >>> print(_summary({"a": {"ratio": 0.01}, "b": {"ratio": 0.03}, "c": {"ratio": 0.02}}, "losses"))
    3 losses: bf16 moves an update by 2.0e-02 of another batch's move (median), at most 3.0e-02 (b)
    """
    if not figures:
        return f"0 {what}"
    worst = max(figures, key=lambda name: figures[name]["ratio"])
    median = float(torch.tensor([figure["ratio"] for figure in figures.values()]).median())
    return (
        f"{len(figures)} {what}: bf16 moves an update by {median:.1e} of another batch's move (median), "
        f"at most {figures[worst]['ratio']:.1e} ({worst})"
    )
