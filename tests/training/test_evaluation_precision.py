"""Test embeddings are computed in fp32 whatever ``training.precision`` says: bf16 keeps about 3 significant digits,
which reorders near neighbours that the exact fp32 kNN search then ranks. The CUDA autocast is stood in for by the
CPU's bf16 autocast (the trainer's helper is patched to open it where it would open CUDA's)."""

from contextlib import nullcontext

import pytest
import torch
from torch import nn

from dml_core.recipes.settings import Recipe, TrainingSettings
from dml_core.training import builders, evaluation, step
from dml_core.training.evaluation import evaluate_model
from tests.training.ddp_step_worker import TINY_RECIPE, ItemsWithLabels


def _bf16_as_on_cuda(device: torch.device, precision: str):
    return torch.autocast("cpu", dtype=torch.bfloat16) if precision == "bf16" else nullcontext()


@pytest.fixture
def autocast_as_on_cuda(monkeypatch):
    for module in (evaluation, step):  # wherever the trainer's helper is looked up
        monkeypatch.setattr(module, "autocast", _bf16_as_on_cuda, raising=False)


class RecordingModel(nn.Module):
    """A linear embedding that records whether autocast was on each time it ran."""

    def __init__(self) -> None:
        super().__init__()
        self.layer = nn.Linear(4, 3)
        self.autocast_seen = []

    def _record(self, items: torch.Tensor) -> torch.Tensor:
        self.autocast_seen.append(torch.is_autocast_enabled("cpu"))
        return self.layer(items)

    def embed(self, items: torch.Tensor) -> torch.Tensor:
        return self._record(items)

    def forward(self, items: torch.Tensor) -> torch.Tensor:
        return self._record(items)


def test_the_stand_in_autocasts_the_training_forward(autocast_as_on_cuda):
    model = RecordingModel()
    optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
    scheduler = torch.optim.lr_scheduler.ConstantLR(optimizer)
    settings = TrainingSettings(iterations=1, precision="bf16")
    loss = step.train_step(
        model, lambda output, _: output.pow(2).mean(), optimizer, scheduler, torch.randn(8, 4), torch.zeros(8), settings
    )
    assert model.autocast_seen == [True] and loss.dtype == torch.float32


def test_evaluation_embeds_without_autocast_though_the_recipe_trains_in_bf16(autocast_as_on_cuda):
    recipe = Recipe.model_validate({**TINY_RECIPE, "training": {**TINY_RECIPE["training"], "precision": "bf16"}})
    labels = torch.arange(40) % 4
    items = torch.randn(40, 4, generator=torch.Generator().manual_seed(0)) + labels[:, None].float()
    model = RecordingModel()
    evaluate_model(model, builders.TestSet(ItemsWithLabels(items, labels), labels.numpy(), None, None), recipe,
                   torch.device("cpu"))  # fmt: skip
    assert model.autocast_seen and not any(model.autocast_seen)
