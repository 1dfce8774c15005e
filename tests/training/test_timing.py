"""On CUDA the host queues a step's work and moves on; the trainer must wait for the queue at the boundaries of its
timed segments, or queued training work is booked as evaluation time and train_seconds reads low.

A fake GPU: every training step queues 1 s of device work after 0.01 s on the host; ``torch.cuda.synchronize``
and an evaluation's copy of the embeddings to the host (as the real one's ``.cpu()``) wait for the queue, a
checkpoint's copies likewise; ``time.perf_counter`` reads the fake host clock. The run itself is a real one on the
CPU, its clock told that it trains on CUDA."""

import itertools
import time
from types import SimpleNamespace

import pytest
import torch

from dml_core.recipes.settings import Recipe
from dml_core.tier import Tier
from dml_core.training import trainer
from dml_core.training.distributed import SINGLE_PROCESS
from dml_core.training.setup import build_run
from tests.training.tiny_runs import tiny_run

STEP_ON_HOST, STEP_ON_DEVICE, EVALUATION, CHECKPOINT = 0.01, 1.0, 0.5, 0.2
RECIPE = tiny_run(training={"iterations": 6, "eval_every": 3, "checkpoint_every": 2})


class FakeGpu:
    def __init__(self) -> None:
        self.host, self.queued, self.events = 0.0, 0.0, []

    def perf_counter(self) -> float:
        return self.host

    def wait(self, why: str) -> None:
        self.events.append(why)
        self.host, self.queued = self.host + self.queued, 0.0

    def step(self, *args, **kwargs) -> torch.Tensor:
        self.events.append("step")
        self.host, self.queued = self.host + STEP_ON_HOST, self.queued + STEP_ON_DEVICE
        return torch.tensor(1.0)


@pytest.fixture
def gpu(monkeypatch, tmp_path):
    fake = FakeGpu()
    monkeypatch.setattr(time, "perf_counter", fake.perf_counter)
    monkeypatch.setattr(torch.cuda, "synchronize", lambda device=None: fake.wait("synchronize"))
    monkeypatch.setattr(trainer, "train_step", fake.step)

    def evaluate_model(*args, **kwargs):
        fake.wait("evaluation copies embeddings to the host")
        fake.host += EVALUATION
        return SimpleNamespace(metrics={"R@1": 50.0}, protocol={}, per_query=None)

    def checkpoint(run, finished=False):
        fake.wait("checkpoint copies the state to the host")
        fake.host += CHECKPOINT

    monkeypatch.setattr(trainer, "evaluate_model", evaluate_model)
    monkeypatch.setattr(trainer.TrainingRun, "checkpoint", checkpoint)
    return fake


@pytest.mark.usefixtures("glyph_data_root")
def test_queued_training_work_is_booked_as_training_time(gpu, tmp_path):
    from dml_core.training.clock import DeviceClock

    recipe = Recipe.model_validate(RECIPE)
    device = torch.device("cpu")
    parts = build_run(recipe, tmp_path / "data", device)
    run = trainer.TrainingRun(recipe, SINGLE_PROCESS, device, tmp_path / "checkpoint.pt", parts, Tier.FULL)
    run.clock = DeviceClock(torch.device("cuda", 0))  # the run's timing as on a GPU
    run.train(progress=False)
    run.close()

    assert run.timing["train_seconds"] == pytest.approx(6 * (STEP_ON_HOST + STEP_ON_DEVICE))
    assert run.timing["evaluation_seconds"] == pytest.approx(2 * EVALUATION)  # at iterations 3 and 6
    assert run.timing["data_wait_seconds"] == 0.0  # the batches cost no fake time
    # no wait between two steps unless an evaluation or a checkpoint comes between them: not one per step
    steps = [i for i, event in enumerate(gpu.events) if event == "step"]
    for events in (gpu.events[a + 1 : b] for a, b in itertools.pairwise(steps)):
        assert "synchronize" not in events or set(events) != {"synchronize"}, gpu.events
