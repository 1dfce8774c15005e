"""The ``graphs`` part: does ``training.cuda_graphs`` give eager's numbers, and how much faster is each paper's step?

For each paper's main run (``main`` of its mini.yaml; paper scale on the generated glyphs, random weights, the recipe's
precision, layout and determinism), from one start and one batch already on the device: ``STEPS`` training steps
with the real loss and optimiser, eagerly twice and graphed once (the trainer's own ``GraphedForward``). Compared
after them: every parameter and buffer of the model and the loss, as the largest difference of a tensor relative to
its norm. Eager against eager says how far two eager runs drift (a few CUDA kernels have no deterministic version);
the graphed run must be no farther from eager than ``DRIFT_FACTOR`` times that, so bitwise equal wherever eager is.
Then each way's model-only it/s (the same step, ``WARMUP_STEPS`` then ``TIMED_STEPS``) and their ratio: the figure
that decides whether graphs become the default.

The part fails when a recipe's graphed run drifts farther, or when a capture fails (the error is kept per recipe).
The check's time limit stops it between recipes, with the figures of those done.
"""

from __future__ import annotations

import torch

from dml_core.gpu_check.experiments.overhead import OneBatchRun, bound_recipe, iterations_per_second
from dml_core.gpu_check.parity import relative_difference
from dml_core.gpu_check.part import CheckContext, Outcome, PartFailed
from dml_core.recipes.mini import main_run_references
from dml_core.training.cuda_graphs import GraphedForward
from dml_core.training.determinism import run_determinism

STEPS = 5
WARMUP_STEPS, TIMED_STEPS = 10, 40
DRIFT_FACTOR = 10.0  # of eager's own drift: the same order, not a tolerance in absolute terms


def state_after(run: OneBatchRun) -> dict[str, torch.Tensor]:
    """Every parameter and buffer of the model and the loss, copied, in float64 on the host."""
    tensors = {f"model.{name}": value for name, value in run.parts.model.state_dict().items()}
    tensors |= {f"loss.{name}": value for name, value in run.parts.loss.state_dict().items()}
    return {name: value.detach().double().cpu() for name, value in tensors.items()}


def largest_drift(reference: dict[str, torch.Tensor], other: dict[str, torch.Tensor]) -> tuple[float, str | None]:
    """The largest relative difference of a tensor (``relative_difference``) and its name (None when all equal).

    >>> reference = {"a": torch.ones(2), "b": torch.tensor([3.0, 4.0])}
    >>> largest_drift(reference, {"a": torch.ones(2), "b": torch.tensor([3.0, 4.5])})
    (0.1, 'b')
    >>> largest_drift({"a": torch.ones(2)}, {"a": torch.ones(2)})
    (0.0, None)
    """
    worst, name = 0.0, None
    for key, value in reference.items():
        drift = relative_difference(other[key], value)
        if drift > worst:
            worst, name = drift, key
    return worst, name


def compare_forwards(
    recipe, context: CheckContext, graphed=GraphedForward, steps: int = STEPS, warmup=WARMUP_STEPS, timed=TIMED_STEPS
) -> dict:
    """One recipe's drifts (eager again, graphed; each against eager) and it/s of both ways;
    ``graphed(model, precision)`` makes the graphed forward (the trainer's; a CPU test passes one with a stand-in
    capture)."""
    device = context.device
    with run_determinism(device, recipe.training.deterministic):
        run = OneBatchRun.build(recipe, context)
        settings, loss_fn = recipe.training, run.parts.loss

        def forward(way: str):
            return graphed(run.parts.model, settings.precision) if way == "graphed" else run.parts.model

        states = {}
        for name in ("eager", "eager_again", "graphed"):
            run.restart()
            graph_or_model = forward(name)
            for _ in range(steps):
                run.step(graph_or_model, loss_fn, settings)
            states[name] = state_after(run)
        speeds = {}
        for name in ("eager", "graphed"):
            run.restart()
            graph_or_model = forward(name)
            speeds[name] = iterations_per_second(
                lambda f=graph_or_model: run.step(f, loss_fn, settings), device, warmup, timed
            )
    eager_drift, eager_worst = largest_drift(states["eager"], states["eager_again"])
    graphed_drift, graphed_worst = largest_drift(states["eager"], states["graphed"])
    return {
        "batch": len(run.images),
        "steps": steps,
        "eager_drift": eager_drift,
        "eager_drift_tensor": eager_worst,
        "graphed_drift": graphed_drift,
        "graphed_drift_tensor": graphed_worst,
        "eager_iterations_per_second": speeds["eager"],
        "graphed_iterations_per_second": speeds["graphed"],
        "graphed_over_eager": speeds["graphed"] / speeds["eager"],
    }


def drifts_too_far(figures: dict) -> bool:
    """Whether the graphed run is farther from eager than eager from itself allows.

    >>> bitwise = {"eager_drift": 0.0, "graphed_drift": 0.0}
    >>> drifts_too_far(bitwise), drifts_too_far({**bitwise, "graphed_drift": 1e-9})
    (False, True)
    >>> drifts_too_far({"eager_drift": 1e-6, "graphed_drift": 5e-6})
    False
    """
    return figures["graphed_drift"] > DRIFT_FACTOR * figures["eager_drift"]


def run_graphs(context: CheckContext, runs=None, recipe_of=bound_recipe, **options) -> Outcome:
    """Every recipe of ``runs`` (default: each paper's main run) through ``compare_forwards`` (``recipe_of`` makes
    each run's recipe, ``options`` go to ``compare_forwards``)."""
    runs = main_run_references() if runs is None else runs
    figures: dict[str, dict] = {}
    for run in runs:
        context.stop_if_out_of_time(f"{len(figures)} of {len(runs)} recipes", figures)
        try:
            figures[run] = compare_forwards(recipe_of(run), context, **options)
        except Exception as error:  # a capture that fails is this recipe's finding; the others still run
            figures[run] = {"error": f"{type(error).__name__}: {error}"}
        context.log(f"graphs {run}: {figures[run]}")
    failed = {run: figure for run, figure in figures.items() if "error" in figure or drifts_too_far(figure)}
    if failed:
        raise PartFailed(f"graphed training differs from eager or could not run: {', '.join(failed)}", figures)
    summary = ", ".join(f"{run.split('/')[0]} x{figure['graphed_over_eager']:.2f}" for run, figure in figures.items())
    return Outcome(f"graphed = eager (within eager's drift); speed-up {summary}", figures)
