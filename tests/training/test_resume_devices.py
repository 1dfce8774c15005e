"""Resuming across devices: a checkpoint holds generator states whose shape depends on the device that made them (a
CUDA generator's state is 16 bytes, a CPU one's 5,056), and ``load_checkpoint`` maps every tensor to the CPU. A state
from a GPU run restores on a GPU and is refused by name elsewhere, never handed to the wrong kind of generator."""

import io

import pytest
import torch

from dml_core.errors import InputError
from dml_core.losses.margin import MarginLoss
from dml_core.training.trainer import _restore_rng

CUDA_GENERATOR_STATE_BYTES = 16  # seed and Philox offset (torch.Generator("cuda").get_state())


def _batch():
    generator = torch.Generator().manual_seed(1)
    embeddings = torch.nn.functional.normalize(torch.randn(16, 8, generator=generator), dim=1)
    return embeddings, torch.arange(16) % 4


def _through_a_checkpoint(state: dict) -> dict:
    """``state`` saved and loaded as ``save_checkpoint`` / ``load_checkpoint`` do (map_location="cpu")."""
    buffer = io.BytesIO()
    torch.save(state, buffer)
    buffer.seek(0)
    return torch.load(buffer, map_location="cpu", weights_only=False)


@pytest.mark.parametrize("recorded", [True, False], ids=["device recorded", "older checkpoint"])
def test_a_margin_loss_state_from_a_gpu_run_is_refused_on_the_cpu_by_name(recorded):
    state = MarginLoss().state_dict()
    extra = {"generator": torch.zeros(CUDA_GENERATOR_STATE_BYTES, dtype=torch.uint8)}
    state["_extra_state"] = {**extra, "device": "cuda"} if recorded else extra
    loss = MarginLoss()
    loss.load_state_dict(_through_a_checkpoint(state))
    with pytest.raises(InputError, match="loss margin: the checkpoint's triplet-sampling generator ran on cuda, "
                                         "this run embeds on cpu; resume on a cuda device"):  # fmt: skip
        loss(*_batch())


def test_a_margin_loss_state_from_a_gpu_run_restores_into_a_gpu_generator(monkeypatch):
    """The GPU generator faked: what matters is that the saved state goes into a generator made on the embeddings'
    device, not into a CPU one."""
    restored = []

    class FakeGenerator:
        def __init__(self, device):
            self.device = torch.device(device)

        def set_state(self, state):
            restored.append((self.device, state.clone()))

    state = MarginLoss().state_dict()
    saved = torch.arange(CUDA_GENERATOR_STATE_BYTES, dtype=torch.uint8)
    state["_extra_state"] = {"generator": saved, "device": "cuda"}
    loss = MarginLoss()
    loss.load_state_dict(_through_a_checkpoint(state))
    monkeypatch.setattr(torch, "Generator", FakeGenerator)
    loss._sampler(torch.device("cuda", 0))
    assert [device for device, _ in restored] == [torch.device("cuda", 0)]
    assert torch.equal(restored[0][1], saved)


def test_a_margin_loss_resumed_on_the_cpu_draws_the_triplets_an_uninterrupted_one_would():
    embeddings, labels = _batch()
    uninterrupted = MarginLoss(seed=3)
    uninterrupted(embeddings, labels)
    checkpoint = _through_a_checkpoint(uninterrupted.state_dict())
    assert checkpoint["_extra_state"]["device"] == "cpu"
    resumed = MarginLoss(seed=3)
    resumed.load_state_dict(checkpoint)
    assert resumed.state_dict()["_extra_state"]["device"] == "cpu"  # kept if saved again before the next step
    assert resumed(embeddings, labels) == uninterrupted(embeddings, labels)
    assert torch.equal(resumed._generator.get_state(), uninterrupted._generator.get_state())


def test_the_run_s_random_state_from_another_kind_of_device_is_refused_by_name():
    cpu_run = {"torch": torch.get_rng_state()}
    gpu_run = {**cpu_run, "cuda": torch.zeros(CUDA_GENERATOR_STATE_BYTES, dtype=torch.uint8)}
    with pytest.raises(InputError, match="written by a run on cuda, resumed on cpu; resume on a cuda device"):
        _restore_rng([gpu_run], 0, torch.device("cpu"))
    with pytest.raises(InputError, match="written by a run on cpu, resumed on cuda; resume on a cpu device"):
        _restore_rng([cpu_run], 0, torch.device("cuda", 0))


def test_the_run_s_random_state_from_a_gpu_run_restores_both_generators_on_a_gpu(monkeypatch):
    restored = []
    monkeypatch.setattr(torch.cuda, "set_rng_state", lambda state, device: restored.append((state, device)))
    cuda_state = torch.arange(CUDA_GENERATOR_STATE_BYTES, dtype=torch.uint8)
    torch.manual_seed(5)
    cpu_state = torch.get_rng_state()
    torch.manual_seed(6)
    _restore_rng(_through_a_checkpoint({"rng": [{"torch": cpu_state, "cuda": cuda_state}]})["rng"], 0,
                 torch.device("cuda", 1))  # fmt: skip
    assert torch.equal(torch.get_rng_state(), cpu_state)
    assert len(restored) == 1 and torch.equal(restored[0][0], cuda_state) and restored[0][1] == torch.device("cuda", 1)
