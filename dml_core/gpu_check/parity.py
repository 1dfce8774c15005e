"""The ``parity`` part: one training step of every registered loss on the CPU and on the GPU, from the same weights
and the same batch, compared.

The step is the trainer's own (``training.step.train_step``) in fp32 with TF32 off, so the two devices differ by
summation order only (about 1e-7 relative a reduction): a real difference (another kernel's semantics, a wrong
dtype, a lost term) stands orders of magnitude above the tolerances (``LOSS_RTOL``, ``UPDATE_RTOL``).
"""

from __future__ import annotations

from dataclasses import dataclass

import torch
import torch.nn.functional as F
from torch import nn

from dml_core.evaluation.knn import exact_fp32_matmul
from dml_core.gpu_check.part import CheckContext, Outcome, PartFailed
from dml_core.losses import LOSSES, build_loss, with_run_values
from dml_core.models.relational_head import RelationalHead
from dml_core.recipes.settings import Precision, TrainingSettings
from dml_core.training.step import train_step

FEATURES, HIDDEN, EMBEDDING = 24, 32, 16
CLASSES, PER_CLASS_PER_HALF = 8, 2
GROUP_SIZES = (CLASSES * PER_CLASS_PER_HALF,) * 2
LOSS_RTOL, UPDATE_RTOL, TINY = 1e-4, 1e-3, 1e-12
NOISE_FLOOR = 1e-4  # of the whole step's update norm: below it an update is rounding noise (``compare_steps``)
# What a loss needs beyond the run's values: a base loss for the composites, DRML's branches, margin's mode. Margin's
# distance-weighted sampling draws from a generator on the embeddings' device, and CPU and CUDA generators give
# different streams from one seed, so only ``sampling: all`` gives comparable steps.
LOSS_PARAMS = {
    "cgml": {"base": "binomial"},
    "graph_consistency": {"base": "triplet"},
    "drml": {"base": "triplet", "num_features": 2},
    "margin": {"sampling": "all"},
}
DRML_BRANCH_DIM = EMBEDDING // 2


class StepModel(nn.Module):
    """The MLP the step trains: 24 features -> tanh 32 -> 16-d, L2-normalised; for drml DRML's relational head on
    the 32-d feature. Small, to isolate the losses' kernels: the smoke and bench parts run the real backbones."""

    def __init__(self, relational: bool) -> None:
        super().__init__()
        self.trunk = nn.Sequential(nn.Linear(FEATURES, HIDDEN), nn.Tanh())
        self.relational = relational
        self.head = (
            RelationalHead(HIDDEN, num_features=2, dim=DRML_BRANCH_DIM) if relational else nn.Linear(HIDDEN, EMBEDDING)
        )

    def forward(self, features: torch.Tensor):
        pooled = self.trunk(features)
        return self.head(pooled) if self.relational else F.normalize(self.head(pooled), dim=1)


def parity_batch(noise_seed: int | None = None) -> tuple[torch.Tensor, torch.Tensor]:
    """Features (32, 24) and labels: two class-aligned halves (as cgml's paired sampler and damlrrm's two streams
    want), each with every class twice; features drawn around a class mean from seed 1. ``noise_seed``: another
    batch of the same classes (the same means, other draws around them)."""
    half = torch.arange(CLASSES).repeat_interleave(PER_CLASS_PER_HALF)
    labels = torch.cat([half, half])
    generator = torch.Generator().manual_seed(1)
    means = torch.randn(CLASSES, FEATURES, generator=generator)
    if noise_seed is not None:
        generator = torch.Generator().manual_seed(noise_seed)
    return means[labels] + 0.5 * torch.randn(len(labels), FEATURES, generator=generator), labels


@dataclass(frozen=True)
class StepRecord:
    """One step: the loss value and every parameter before and after it (float64, on the CPU)."""

    loss: float
    before: dict[str, torch.Tensor]
    after: dict[str, torch.Tensor]

    def updates(self) -> dict[str, torch.Tensor]:
        return {name: self.after[name] - self.before[name] for name in self.before}


def _parameters(model: nn.Module, loss_fn: nn.Module) -> dict[str, torch.Tensor]:
    named = [(f"model.{n}", p) for n, p in model.named_parameters()] + [
        (f"loss.{n}", p) for n, p in loss_fn.named_parameters()
    ]
    return {name: parameter.detach().to("cpu", torch.float64, copy=True) for name, parameter in named}


def one_step(
    loss_name: str, device: torch.device, precision: Precision = "fp32", noise_seed: int | None = None
) -> StepRecord:
    """One SGD step of ``loss_name`` on ``device`` from weights built on the CPU from seed 0 (``precision``: "bf16"
    puts the model's forward under the trainer's bf16 autocast, which is CUDA's only; ``noise_seed``:
    ``parity_batch``'s).

    Plain SGD (lr 1, no momentum) makes an update minus the gradient, so a difference between devices is the
    gradient's, not amplified: Adam's first step, lr * g / (|g| + eps), would turn noise in a near-zero gradient
    into an update of full size."""
    torch.manual_seed(0)
    model = StepModel(relational=loss_name == "drml")
    run_values = {"num_classes": CLASSES, "embedding_dim": EMBEDDING, "group_sizes": GROUP_SIZES}
    loss_fn = build_loss(loss_name, **with_run_values(loss_name, LOSS_PARAMS.get(loss_name, {}), **run_values))
    model, loss_fn = model.to(device), loss_fn.to(device)
    features, labels = (tensor.to(device) for tensor in parity_batch(noise_seed))
    optimizer = torch.optim.SGD([*model.parameters(), *loss_fn.parameters()], lr=1.0)
    scheduler = torch.optim.lr_scheduler.LambdaLR(optimizer, lambda _: 1.0)
    settings = TrainingSettings(iterations=1, precision=precision, channels_last=False)
    before = _parameters(model, loss_fn)
    with exact_fp32_matmul():
        loss = train_step(model, loss_fn, optimizer, scheduler, features, labels, settings)
    return StepRecord(float(loss.item()), before, _parameters(model, loss_fn))


def relative_difference(value: torch.Tensor, reference: torch.Tensor, floor: float = 0.0) -> float:
    """``||value - reference|| / max(||reference||, floor, 1e-12)`` in float64 (0 when both are zero).

    >>> round(relative_difference(torch.tensor([3.0, 4.0]), torch.tensor([3.0, 3.0])), 4)  # 1 / (3 * 2 ** 0.5)
    0.2357
    >>> round(relative_difference(torch.tensor([2e-6]), torch.tensor([1e-6]), floor=1e-2), 6)  # under the floor
    0.0001
    """
    value, reference = value.double(), reference.double()
    return float((value - reference).norm() / max(float(reference.norm()), floor, TINY))


def compare_steps(reference: StepRecord, other: StepRecord) -> dict:
    """The loss's relative difference and the largest relative difference of a parameter tensor's update (each
    against its reference update, or ``NOISE_FLOOR`` times the whole step's update where that is larger).

    The floor is for a tensor whose gradient is zero in exact arithmetic, which fp32 leaves as rounding noise that
    no device reproduces (DRML's updater bias, added to every embedding alike, cancels in every distance); a tensor
    updated by less than it moves the model by less than the tolerance anyway."""
    loss = abs(other.loss - reference.loss) / max(abs(reference.loss), TINY)
    reference_updates, other_updates = reference.updates(), other.updates()
    step = float(torch.stack([update.double().norm() for update in reference_updates.values()]).norm())
    floor = NOISE_FLOOR * step
    updates = {
        name: relative_difference(other_updates[name], update, floor) for name, update in reference_updates.items()
    }
    worst = max(updates, key=updates.get)
    return {"loss": reference.loss, "loss_rel": loss, "update_rel_max": updates[worst], "worst_parameter": worst}


def within_tolerance(comparison: dict) -> bool:
    return comparison["loss_rel"] <= LOSS_RTOL and comparison["update_rel_max"] <= UPDATE_RTOL


def run_parity(context: CheckContext) -> Outcome:
    cpu = torch.device("cpu")
    figures, bad = {}, []
    for name in sorted(LOSSES):
        try:
            comparison = compare_steps(one_step(name, cpu), one_step(name, context.device))
        except Exception as error:  # one loss's crash (a missing kernel) must not hide the others' verdicts
            figures[name] = {"error": f"{type(error).__name__}: {error}"}
            bad.append(f"{name} ({type(error).__name__})")
            continue
        figures[name] = comparison
        if not within_tolerance(comparison):
            bad.append(f"{name} (loss {comparison['loss_rel']:.1e}, update {comparison['update_rel_max']:.1e})")
    figures["tolerances"] = {"loss_rel": LOSS_RTOL, "update_rel": UPDATE_RTOL}
    if bad:
        raise PartFailed(f"{len(bad)} of {len(LOSSES)} losses differ between CPU and GPU: {', '.join(bad)}", figures)
    worst_loss = max(figures[name]["loss_rel"] for name in LOSSES)
    worst_update = max(figures[name]["update_rel_max"] for name in LOSSES)
    return Outcome(f"{len(LOSSES)} losses; loss <= {worst_loss:.0e}, updates <= {worst_update:.0e} rel", figures)
