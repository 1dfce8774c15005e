"""Run by torchrun from test_distributed.py: a few training steps of each loss case on this rank's share of
the global batches, and one evaluation of a sharded test set; rank 0 saves the loss values, final parameters
and metrics. ``run_case`` and ``run_evaluation`` with one process are the references the test computes itself."""

from __future__ import annotations

import sys

import torch
from torch import nn

from dml_core.losses import build_loss
from dml_core.recipes.settings import Recipe, TrainingSettings
from dml_core.training.builders import TestSet
from dml_core.training.distributed import Process, Sharding
from dml_core.training.evaluation import evaluate_model
from dml_core.training.step import train_step

STEPS = 3
EMBEDDING_DIM = 6
# name: (loss, its parameters, the sampler's streams, steps with the first layer frozen (the warm-up freeze))
CASES = {
    "pair (multi-similarity)": ("multi_similarity", {}, (16,), 0),
    "proxy (proxy-anchor)": ("proxy_anchor", {"num_classes": 4, "embedding_dim": EMBEDDING_DIM}, (16,), 0),
    "damlrrm (two streams)": ("damlrrm", {"group_sizes": (8, 8)}, (8, 8), 0),
    "pair, first layer frozen for one step": ("multi_similarity", {}, (16,), 1),
    "proxy, gradients clipped": ("proxy_anchor", {"num_classes": 4, "embedding_dim": EMBEDDING_DIM}, (16,), 0),
}
# training.grad_clip_norm per case (None: no clipping); 10 is well below this case's gradient norms (65-112)
GRAD_CLIP_NORMS = {"proxy, gradients clipped": 10.0}


def global_batches(group_sizes: tuple[int, ...]) -> list[tuple[torch.Tensor, torch.Tensor]]:
    """Batches of 4 classes, every stream class-structured (2 or 4 images per class), features from a seed."""
    generator = torch.Generator().manual_seed(7)
    batches = []
    for _ in range(STEPS):
        labels = torch.cat([torch.arange(4).repeat_interleave(size // 4) for size in group_sizes])
        images = torch.randn(len(labels), 10, generator=generator) + labels[:, None].float()
        batches.append((images, labels))
    return batches


def run_case(name: str, process: Process) -> dict:
    loss_name, params, group_sizes, frozen_steps = CASES[name]
    torch.manual_seed(0)
    model = nn.Sequential(nn.Linear(10, 12), nn.Tanh(), nn.Linear(12, EMBEDDING_DIM))
    loss_fn = build_loss(loss_name, **params)
    optimizer = torch.optim.SGD([*model.parameters(), *loss_fn.parameters()], lr=0.05, momentum=0.9)
    scheduler = torch.optim.lr_scheduler.StepLR(optimizer, step_size=2, gamma=0.5)
    sharding = Sharding(process, group_sizes)
    settings = TrainingSettings(iterations=1, grad_clip_norm=GRAD_CLIP_NORMS.get(name))
    losses = []
    for step, (images, labels) in enumerate(global_batches(group_sizes)):
        if step in (0, frozen_steps):  # as the trainer does: a new DDP wrapper whenever what trains changes
            model[0].requires_grad_(step >= frozen_steps)
            forward = sharding.wrap(model, torch.device("cpu"))
        slots = torch.as_tensor(sharding.slots)
        loss = train_step(
            forward, loss_fn, optimizer, scheduler, images[slots], labels[slots], settings, sharding,
        )  # fmt: skip
        losses.append(loss.item())
    return {
        "losses": losses,
        "model": {key: value.clone() for key, value in model.state_dict().items()},
        "loss": {key: value.clone() for key, value in loss_fn.state_dict().items()},
    }


TINY_RECIPE = {
    "id": "tiny-ddp",
    "paper": "cgml",
    "targets": [{"table": "table3", "row": "triplet-cub200"}],
    "data": {
        "dataset": "embedded",
        "num_workers": 0,
        "transforms": {"resize": 40, "crop_size": 32, "train_crop": "random_crop"},
    },
    # frozen BN: the model is then the same function of its parameters on any number of CPU processes
    # (SyncBatchNorm, which makes training-mode BN world-size invariant, needs CUDA)
    "model": {"backbone": "bn_inception", "weights": "random", "embedding_dim": 16, "frozen_bn": True},
    "loss": {"name": "proxy_anchor"},
    "sampler": {"name": "pk", "params": {"classes_per_batch": 4, "images_per_class": 2}},
    # SGD, not Adam: Adam's first steps are lr * sign(gradient), which turns float-order noise in near-zero
    # gradients (a different reduction order on two processes) into lr-sized differences
    "optimizer": {"name": "sgd", "lr": 1e-2, "momentum": 0.9},
    "schedule": {"name": "step", "step_size": 4, "gamma": 0.5},
    "training": {"iterations": 6, "eval_every": 3, "checkpoint_every": 1, "eval_batch_size": 16},
    "evaluation": {"recall_ks": [1, 2], "kmeans_iterations": 5},
}


class RowwiseEmbedder(nn.Module):
    """A model whose embedding of an item does not depend on the rest of its batch (exactly), so metrics can be
    compared bit for bit however the test set is sliced over processes."""

    def embed(self, items: torch.Tensor) -> torch.Tensor:
        return torch.stack([items[:, 0] * 3.0, items[:, 1] - items[:, 2], items[:, 3]], dim=1)


class ItemsWithLabels(torch.utils.data.Dataset):
    def __init__(self, items: torch.Tensor, labels: torch.Tensor) -> None:
        self.items, self.labels = items, labels

    def __len__(self) -> int:
        return len(self.items)

    def __getitem__(self, index: int):
        return self.items[index], self.labels[index], index


def run_evaluation(process: Process) -> dict:
    """The recipe's full evaluation of 101 items (not a multiple of 2 or 3: ranks embed unequal slices)."""
    generator = torch.Generator().manual_seed(3)
    labels = torch.arange(101) % 9
    items = torch.randn(101, 5, generator=generator) + labels[:, None].float() * 0.4
    test_set = TestSet(ItemsWithLabels(items, labels), labels.numpy(), None, None)
    recipe = Recipe.model_validate(TINY_RECIPE)
    return evaluate_model(RowwiseEmbedder(), test_set, recipe, torch.device("cpu"), process).metrics


def main(out_path: str) -> None:
    torch.set_num_threads(1)
    process = Process.from_environment()
    process.init_process_group(torch.device("cpu"))
    outcome = {name: run_case(name, process) for name in CASES}
    outcome["evaluation"] = run_evaluation(process)
    if process.is_main:
        torch.save(outcome, out_path)
    process.leave_process_group()


if __name__ == "__main__":
    main(sys.argv[1])
