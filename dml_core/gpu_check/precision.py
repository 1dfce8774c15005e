"""The ``precision`` part: what the ``precision`` reading's other value (bf16 autocast of the model on CUDA; the
default is fp32) does to a training step, beside what the step's own noise does.

For every registered loss, on the GPU, from the parity part's model, weights and batch (``parity.one_step``): the
whole step's update under bf16 autocast against the fp32 step's, ``||U_bf16 - U_fp32|| / ||U_fp32||`` (every
parameter tensor together), and, as the scale it is read against, the fp32 step on another batch of the same
classes (the same class means, other draws around them), ``||U_batch - U_fp32|| / ||U_fp32||``. Their ratio is the
figure: bf16's perturbation of a step as a fraction of the perturbation that drawing another batch makes anyway
(SGD's own noise). Reported, never a failure: it is evidence for the reading's default (``reproduce/readings.yaml``:
fp32 until bf16 is shown harmless), not a correctness check; a loss whose ratio is near 1 or above would make bf16 a
visible change of the method's steps.

What it cannot say: the model is the parity part's MLP, so only its linear layers run in bf16 (the backbones'
convolutions do too under autocast, and are not measured here); one step says nothing of how the difference
accumulates over a run, which only a run under both values can (the reading's why).
"""

from __future__ import annotations

import torch

from dml_core.gpu_check.parity import one_step, relative_difference
from dml_core.gpu_check.part import CheckContext, Outcome
from dml_core.losses import LOSSES

OTHER_BATCH = 2  # parity_batch's noise seed of the second batch


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


def precision_figures(loss_name: str, device: torch.device) -> dict:
    """One loss's bf16 and other-batch perturbations of the fp32 step, and their ratio."""
    fp32 = one_step(loss_name, device).updates()
    bf16 = whole_update_difference(fp32, one_step(loss_name, device, bf16=True).updates())
    batch = whole_update_difference(fp32, one_step(loss_name, device, noise_seed=OTHER_BATCH).updates())
    return {"bf16_rel": bf16, "other_batch_rel": batch, "ratio": bf16 / batch if batch > 0 else float("inf")}


def run_precision(context: CheckContext) -> Outcome:
    figures = {name: precision_figures(name, context.device) for name in sorted(LOSSES)}
    worst = max(figures, key=lambda name: figures[name]["ratio"])
    median = float(torch.tensor([f["ratio"] for f in figures.values()]).median())
    summary = (
        f"{len(figures)} losses; bf16 moves a step by {median:.1e} of another batch's move (median), "
        f"at most {figures[worst]['ratio']:.1e} ({worst})"
    )
    return Outcome(summary, figures)
