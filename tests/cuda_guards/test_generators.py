"""Random generators follow the tensors' device: the margin loss's sampling generator (distance-weighted sampling
calls ``multinomial``, which needs its generator on the distances' device) resumes from a checkpoint on the kind of
device that saved it, and a CUDA generator's state is never forced into a CPU generator."""

import pytest
import torch
import torch.nn.functional as F

from dml_core.errors import InputError
from dml_core.losses.margin import MarginLoss

LABELS = torch.tensor([0, 0, 1, 1, 2, 2, 3, 3])
# A CUDA (Philox) generator's state: seed and offset, 16 bytes; a CPU (mt19937) one's is 5056 bytes.
CUDA_STATE = {"generator": torch.zeros(16, dtype=torch.uint8), "device": "cuda"}


def _draws(loss: MarginLoss, batches: list[torch.Tensor]) -> list[torch.Tensor]:
    values = []
    for embeddings in batches:
        values.append(loss(embeddings, LABELS))
    return values


def test_a_cpu_run_resumes_the_same_draws():
    batches = [F.normalize(torch.randn(8, 16), dim=1) for _ in range(4)]
    straight = MarginLoss(seed=3)
    expected = _draws(straight, batches)
    first = MarginLoss(seed=3)
    _draws(first, batches[:2])
    saved = first.state_dict()
    assert saved["_extra_state"]["device"] == "cpu"
    del saved["_extra_state"]["device"]  # as checkpoints written before the device was recorded (CPU runs)
    resumed = MarginLoss(seed=3)
    resumed.load_state_dict(saved)
    assert torch.equal(torch.stack(_draws(resumed, batches[2:])), torch.stack(expected[2:]))
    again = MarginLoss(seed=3)  # saved again before any draw: the checkpoint's state is kept, not dropped
    again.load_state_dict(resumed.state_dict())
    assert torch.equal(again.get_extra_state()["generator"], resumed.get_extra_state()["generator"])


def test_a_cuda_generators_state_loads_without_a_gpu_and_is_not_forced_into_a_cpu_generator():
    loss = MarginLoss(seed=3)
    state = loss.state_dict()
    state["_extra_state"] = CUDA_STATE
    loss.load_state_dict(state)  # the CPU generator would refuse a 16-byte state here
    assert loss.get_extra_state() == CUDA_STATE  # kept for the CUDA run it belongs to
    embeddings = F.normalize(torch.randn(8, 16), dim=1)
    with pytest.raises(InputError, match=r"generator ran on cuda, this run embeds on cpu; resume on a cuda device"):
        loss(embeddings, LABELS)  # the draws cannot continue on another kind of device: refused by name
